/* What both C speedups of the fingerprint path share (_cfingerprint.c, _csketch.c).
 * See docs/design/fingerprint.md#the-c-speedups.
 */
#ifndef NEWSCRAWL_SPEEDUPS_H
#define NEWSCRAWL_SPEEDUPS_H

/* core.py's SPEEDUPS_API: raised with every change of the modules' functions or results */
#define SPEEDUPS_API 1

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#if PY_VERSION_HEX < 0x030C0000
#define READY(o) (PyUnicode_READY(o) == 0)
#else
#define READY(o) 1
#endif

/* The module of `def`, carrying API = SPEEDUPS_API (core.py ignores one of another version) */
static inline PyObject *speedups_module(PyModuleDef *def) {
    PyObject *m = PyModule_Create(def);
    if (m && PyModule_AddIntConstant(m, "API", SPEEDUPS_API) < 0) Py_CLEAR(m);
    return m;
}

#endif

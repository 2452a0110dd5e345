/* The text sketch's per-character work in C: the kept characters (before NFKC, which stays
 * Python's), the numbers with the character after each, and the 4-gram pass: the distinct 4-grams
 * of the normalized text (code points), the CRC-32 of each gram's 16 UTF-32-LE bytes, the
 * multiply-shift mix and the minimum of each bin in one pass without a sort, then densified.
 * The same values as sketch.py's normalize, _number_pairs and _dense_minima, which stay the
 * definition (and the fallback when this module is not built);
 * tests/test_simhash_speedups_sketch.py checks that both give the same sketches.
 * See docs/design/fingerprint.md#the-text-sketch.
 */
#include "_speedups.h"

#define SHINGLE 4
#define MIX 0x9E3779B97F4A7C15ULL /* sketch.py's _MIX */

/* ---- CRC-32 (zlib's: reflected 0xEDB88320), four table lookups per 32-bit little-endian word -- */

static uint32_t crc_table[4][256];

static void crc_init(void) {
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++) c = (c & 1) ? (c >> 1) ^ 0xEDB88320U : c >> 1;
        crc_table[0][i] = c;
    }
    for (uint32_t i = 0; i < 256; i++)
        for (int t = 1; t < 4; t++)
            crc_table[t][i] = (crc_table[t - 1][i] >> 8) ^ crc_table[0][crc_table[t - 1][i] & 0xFF];
}

/* zlib.crc32 of the UTF-32-LE bytes of cp[0:n]: a code point's value is its 4 bytes read as a
 * little-endian word, on any host. */
static inline uint32_t crc32_utf32(const Py_UCS4 *cp, Py_ssize_t n) {
    uint32_t c = 0xFFFFFFFFU;
    for (Py_ssize_t i = 0; i < n; i++) {
        c ^= (uint32_t)cp[i];
        c = crc_table[3][c & 0xFF] ^ crc_table[2][(c >> 8) & 0xFF] ^ crc_table[1][(c >> 16) & 0xFF]
            ^ crc_table[0][c >> 24];
    }
    return c ^ 0xFFFFFFFFU;
}

static inline uint32_t mixed(uint32_t crc) { return (uint32_t)(((uint64_t)crc * MIX) >> 32); }

/* ---- dense_minima ----------------------------------------------------------------------------- */

typedef struct {
    uint32_t hash; /* the gram's mixed CRC */
    uint32_t at;   /* the gram's start + 1; 0: an empty slot */
} slot_t;

static PyObject *py_dense_minima(PyObject *self, PyObject *args) {
    PyObject *text;
    Py_ssize_t bins;
    if (!PyArg_ParseTuple(args, "Un:dense_minima", &text, &bins)) return NULL;
    if (bins < 1) {
        PyErr_SetString(PyExc_ValueError, "bins must be at least 1");
        return NULL;
    }
    if ((size_t)bins > (size_t)PY_SSIZE_T_MAX / sizeof(int64_t)) return PyErr_NoMemory();
    if (!READY(text)) return NULL;
    Py_ssize_t n = PyUnicode_GET_LENGTH(text);
    if (n >= (Py_ssize_t)UINT32_MAX) {
        PyErr_SetString(PyExc_OverflowError, "text too long");
        return NULL;
    }

    Py_UCS4 *copy = NULL; /* the code points, when the str does not store them as UCS-4 */
    const Py_UCS4 *cp;
    int64_t *mins = NULL;
    slot_t *table = NULL;
    PyObject *list = NULL, *result = NULL;
    Py_ssize_t count = 0;

    if (PyUnicode_KIND(text) == PyUnicode_4BYTE_KIND) {
        cp = (const Py_UCS4 *)PyUnicode_DATA(text);
    } else {
        copy = PyUnicode_AsUCS4Copy(text);
        if (!copy) return NULL;
        cp = copy;
    }
    mins = PyMem_Malloc((size_t)bins * sizeof(int64_t));
    if (!mins) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t b = 0; b < bins; b++) mins[b] = -1;

    if (n > 0 && n < SHINGLE) { /* one gram: the whole text */
        uint32_t h = mixed(crc32_utf32(cp, n));
        mins[h % (uint64_t)bins] = h / (uint64_t)bins;
        count = 1;
    } else if (n >= SHINGLE) {
        Py_ssize_t grams = n - SHINGLE + 1;
        size_t size = 16;
        while (size < 2 * (size_t)grams) size <<= 1; /* at most half full */
        size_t mask = size - 1;
        table = PyMem_Calloc(size, sizeof(slot_t));
        if (!table) {
            PyErr_NoMemory();
            goto done;
        }
        for (Py_ssize_t i = 0; i < grams; i++) {
            const Py_UCS4 *g = cp + i;
            uint32_t h = mixed(crc32_utf32(g, SHINGLE));
            size_t k = h & mask;
            int seen = 0;
            while (table[k].at) {
                if (table[k].hash == h
                    && memcmp(cp + (table[k].at - 1), g, SHINGLE * sizeof(Py_UCS4)) == 0) {
                    seen = 1;
                    break;
                }
                k = (k + 1) & mask;
            }
            if (seen) continue;
            table[k].hash = h;
            table[k].at = (uint32_t)i + 1;
            count++;
            Py_ssize_t b = (Py_ssize_t)(h % (uint64_t)bins);
            int64_t v = (int64_t)(h / (uint64_t)bins);
            if (mins[b] < 0 || v < mins[b]) mins[b] = v;
        }
    }

    /* densification: an empty bin borrows the next non-empty bin's minimum (rotation, offset) */
    list = PyList_New(bins);
    if (!list) goto done;
    for (Py_ssize_t b = 0; b < bins; b++) {
        uint64_t d = 0;
        if (count) {
            Py_ssize_t j = b;
            while (mins[j % bins] < 0) j++;
            d = ((uint64_t)mins[j % bins] + (uint64_t)(j - b) * 0x9E3779B1ULL) & 0xFFFFFFFFULL;
        }
        PyObject *v = PyLong_FromUnsignedLongLong(d);
        if (!v) goto done;
        PyList_SET_ITEM(list, b, v);
    }
    result = Py_BuildValue("(nO)", count, list);
done:
    Py_XDECREF(list);
    PyMem_Free(table);
    PyMem_Free(mins);
    PyMem_Free(copy);
    return result;
}

/* ---- kept: the letters, digits and ideographs of a text ------------------------------------- */

/* "".join(re.findall(r"[^\W_]+", text)): re's \w is Py_UNICODE_ISALNUM or "_" */
static PyObject *py_kept(PyObject *self, PyObject *text) {
    if (!PyUnicode_Check(text)) {
        PyErr_Format(PyExc_TypeError, "kept() needs a str, not %.100s", Py_TYPE(text)->tp_name);
        return NULL;
    }
    if (!READY(text)) return NULL;
    Py_ssize_t n = PyUnicode_GET_LENGTH(text), len = 0;
    int kind = PyUnicode_KIND(text);
    const void *data = PyUnicode_DATA(text);
    void *buf = PyMem_Malloc(n ? (size_t)n * kind : 1);
    if (!buf) return PyErr_NoMemory();
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_UCS4 ch = PyUnicode_READ(kind, data, i);
        if (Py_UNICODE_ISALNUM(ch)) PyUnicode_WRITE(kind, buf, len++, ch);
    }
    PyObject *result = PyUnicode_FromKindAndData(kind, buf, len); /* narrows the kind if it can */
    PyMem_Free(buf);
    return result;
}

/* ---- number_pairs: the numbers of a text, each with the character after it ------------------- */

static inline int is_digit(Py_UCS4 ch) { return ch >= '0' && ch <= '9'; }

/* set(re.findall(r"([0-9]+(?:[.,][0-9]+)*)(?=(.?))", text, re.DOTALL)), or None when the text
 * has a full-width digit or an ASCII digit, full-width point or comma, ASCII digit (sketch.py's
 * _WIDE_DIGIT_RE, _WIDE_SEPARATOR_RE: such a text is read after NFKC). */
static PyObject *py_number_pairs(PyObject *self, PyObject *text) {
    if (!PyUnicode_Check(text)) {
        PyErr_Format(PyExc_TypeError, "number_pairs() needs a str, not %.100s",
                     Py_TYPE(text)->tp_name);
        return NULL;
    }
    if (!READY(text)) return NULL;
    Py_ssize_t n = PyUnicode_GET_LENGTH(text);
    int kind = PyUnicode_KIND(text);
    const void *data = PyUnicode_DATA(text);
    if (kind != PyUnicode_1BYTE_KIND) { /* full-width forms are not latin-1 */
        for (Py_ssize_t i = 0; i < n; i++) {
            Py_UCS4 ch = PyUnicode_READ(kind, data, i);
            if ((ch >= 0xFF10 && ch <= 0xFF19)
                || ((ch == 0xFF0E || ch == 0xFF0C) && i > 0 && i + 1 < n
                    && is_digit(PyUnicode_READ(kind, data, i - 1))
                    && is_digit(PyUnicode_READ(kind, data, i + 1))))
                Py_RETURN_NONE;
        }
    }
    PyObject *pairs = PySet_New(NULL);
    if (!pairs) return NULL;
    Py_ssize_t i = 0;
    while (i < n) {
        if (!is_digit(PyUnicode_READ(kind, data, i))) {
            i++;
            continue;
        }
        Py_ssize_t j = i + 1;
        for (;;) {
            while (j < n && is_digit(PyUnicode_READ(kind, data, j))) j++;
            if (j + 1 < n && is_digit(PyUnicode_READ(kind, data, j + 1))) {
                Py_UCS4 sep = PyUnicode_READ(kind, data, j);
                if (sep == '.' || sep == ',') {
                    j += 2;
                    continue;
                }
            }
            break;
        }
        PyObject *number = PyUnicode_Substring(text, i, j);
        PyObject *after = number ? PyUnicode_Substring(text, j, j < n ? j + 1 : j) : NULL;
        PyObject *pair = after ? PyTuple_Pack(2, number, after) : NULL;
        int err = pair ? PySet_Add(pairs, pair) : -1;
        Py_XDECREF(number);
        Py_XDECREF(after);
        Py_XDECREF(pair);
        if (err < 0) {
            Py_DECREF(pairs);
            return NULL;
        }
        i = j;
    }
    return pairs;
}

static PyMethodDef methods[] = {
    {"dense_minima", py_dense_minima, METH_VARARGS,
     "dense_minima(norm, bins) -> (distinct 4-grams, densified bin minima),"
     " as sketch.py's _dense_minima"},
    {"kept", py_kept, METH_O, "kept(text) -> its letters, digits and ideographs, as in normalize"},
    {"number_pairs", py_number_pairs, METH_O,
     "number_pairs(text) -> {(number, next character)}, or None when the text needs NFKC first"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_csketch",
    "The text sketch's per-character work in C (see sketch.py).", -1, methods,
};

PyMODINIT_FUNC PyInit__csketch(void) {
    crc_init();
    return speedups_module(&module);
}

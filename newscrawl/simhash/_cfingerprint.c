/* The fingerprint's per-document arithmetic in C: token counts with position weights, BLAKE2b-64
 * feature hashes, IDF lookups in the hashed table, cubed weights, the share cap, the shift and
 * the 64-lane vote. The same integer arithmetic as Fingerprinter._features and analyze in
 * fingerprinter.py, which stay the definition (and the fallback when this module is not built);
 * tests/test_simhash_speedups.py checks that both give the same fingerprints.
 * See docs/design/fingerprint.md#the-c-speedups.
 */
#include "_speedups.h"
#include <stdlib.h>

#ifndef __SIZEOF_INT128__
#error "needs a compiler with unsigned __int128 (gcc, clang); the pure-Python path is used instead"
#endif

typedef unsigned __int128 u128;

/* ---- BLAKE2b with an 8-byte digest, no key (RFC 7693) -------------------------------------- */

static const uint64_t B2B_IV[8] = {
    0x6A09E667F3BCC908ULL, 0xBB67AE8584CAA73BULL, 0x3C6EF372FE94F82BULL, 0xA54FF53A5F1D36F1ULL,
    0x510E527FADE682D1ULL, 0x9B05688C2B3E6C1FULL, 0x1F83D9ABFB41BD6BULL, 0x5BE0CD19137E2179ULL,
};

static const uint8_t B2B_SIGMA[12][16] = {
    {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15},
    {14, 10, 4, 8, 9, 15, 13, 6, 1, 12, 0, 2, 11, 7, 5, 3},
    {11, 8, 12, 0, 5, 2, 15, 13, 10, 14, 3, 6, 7, 1, 9, 4},
    {7, 9, 3, 1, 13, 12, 11, 14, 2, 6, 5, 10, 4, 0, 15, 8},
    {9, 0, 5, 7, 2, 4, 10, 15, 14, 1, 11, 12, 6, 8, 3, 13},
    {2, 12, 6, 10, 0, 11, 8, 3, 4, 13, 7, 5, 15, 14, 1, 9},
    {12, 5, 1, 15, 14, 13, 4, 10, 0, 7, 6, 3, 9, 2, 8, 11},
    {13, 11, 7, 14, 12, 1, 3, 9, 5, 0, 15, 4, 8, 6, 2, 10},
    {6, 15, 14, 9, 11, 3, 0, 8, 12, 2, 13, 7, 1, 4, 10, 5},
    {10, 2, 8, 4, 7, 6, 1, 5, 15, 11, 9, 14, 3, 12, 13, 0},
    {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15},
    {14, 10, 4, 8, 9, 15, 13, 6, 1, 12, 0, 2, 11, 7, 5, 3},
};

#define ROTR64(x, y) (((x) >> (y)) | ((x) << (64 - (y))))
#define B2B_G(a, b, c, d, x, y)          \
    do {                                 \
        v[a] = v[a] + v[b] + (x);        \
        v[d] = ROTR64(v[d] ^ v[a], 32);  \
        v[c] = v[c] + v[d];              \
        v[b] = ROTR64(v[b] ^ v[c], 24);  \
        v[a] = v[a] + v[b] + (y);        \
        v[d] = ROTR64(v[d] ^ v[a], 16);  \
        v[c] = v[c] + v[d];              \
        v[b] = ROTR64(v[b] ^ v[c], 63);  \
    } while (0)

static uint64_t load64_le(const uint8_t *p) {
    return (uint64_t)p[0] | ((uint64_t)p[1] << 8) | ((uint64_t)p[2] << 16) |
           ((uint64_t)p[3] << 24) | ((uint64_t)p[4] << 32) | ((uint64_t)p[5] << 40) |
           ((uint64_t)p[6] << 48) | ((uint64_t)p[7] << 56);
}

static void b2b_compress(uint64_t h[8], const uint8_t block[128], uint64_t t, int last) {
    uint64_t v[16], m[16];
    for (int i = 0; i < 8; i++) {
        v[i] = h[i];
        v[i + 8] = B2B_IV[i];
    }
    v[12] ^= t; /* the byte counter's high word stays 0: tokens are far below 2**64 bytes */
    if (last) v[14] = ~v[14];
    for (int i = 0; i < 16; i++) m[i] = load64_le(block + 8 * i);
    for (int r = 0; r < 12; r++) {
        const uint8_t *s = B2B_SIGMA[r];
        B2B_G(0, 4, 8, 12, m[s[0]], m[s[1]]);
        B2B_G(1, 5, 9, 13, m[s[2]], m[s[3]]);
        B2B_G(2, 6, 10, 14, m[s[4]], m[s[5]]);
        B2B_G(3, 7, 11, 15, m[s[6]], m[s[7]]);
        B2B_G(0, 5, 10, 15, m[s[8]], m[s[9]]);
        B2B_G(1, 6, 11, 12, m[s[10]], m[s[11]]);
        B2B_G(2, 7, 8, 13, m[s[12]], m[s[13]]);
        B2B_G(3, 4, 9, 14, m[s[14]], m[s[15]]);
    }
    for (int i = 0; i < 8; i++) h[i] ^= v[i] ^ v[i + 8];
}

/* int.from_bytes(hashlib.blake2b(data, digest_size=8).digest(), "big") */
static uint64_t blake2b64(const uint8_t *data, size_t n) {
    uint64_t h[8];
    uint8_t block[128];
    uint64_t t = 0;
    memcpy(h, B2B_IV, sizeof h);
    h[0] ^= 0x01010000ULL ^ 8; /* fanout 1, depth 1, no key, digest length 8 */
    while (n > 128) {
        t += 128;
        b2b_compress(h, data, t, 0);
        data += 128;
        n -= 128;
    }
    memset(block, 0, sizeof block);
    memcpy(block, data, n);
    t += n;
    b2b_compress(h, block, t, 1);
    /* the digest is h[0]'s little-endian bytes; read big-endian, that is h[0] byte-swapped */
    return __builtin_bswap64(h[0]);
}

static PyObject *py_blake2b64(PyObject *self, PyObject *arg) {
    Py_buffer view;
    if (PyObject_GetBuffer(arg, &view, PyBUF_SIMPLE) < 0) return NULL;
    uint64_t key = blake2b64((const uint8_t *)view.buf, (size_t)view.len);
    PyBuffer_Release(&view);
    return PyLong_FromUnsignedLongLong(key);
}

/* ---- counting tokens ------------------------------------------------------------------------ */

typedef struct {
    PyObject *token; /* borrowed from the caller's list */
    Py_hash_t hash;
    int64_t count; /* thousandths */
} Slot;

static int same_str(PyObject *a, PyObject *b) {
    if (a == b) return 1;
    Py_ssize_t n = PyUnicode_GET_LENGTH(a);
    if (n != PyUnicode_GET_LENGTH(b) || PyUnicode_KIND(a) != PyUnicode_KIND(b)) return 0;
    return memcmp(PyUnicode_DATA(a), PyUnicode_DATA(b), (size_t)n * PyUnicode_KIND(a)) == 0;
}

static unsigned bit_length128(u128 x) {
    uint64_t hi = (uint64_t)(x >> 64), lo = (uint64_t)x;
    if (hi) return 128 - (unsigned)__builtin_clzll(hi);
    if (lo) return 64 - (unsigned)__builtin_clzll(lo);
    return 0;
}

/* share_cap() of fingerprinter.py; 0 when no weight needs capping. Its loop stops by the k with
 * percent * k >= 100, so it reads only the 100 / percent + 2 largest weights: those are kept
 * sorted (insertion into a short array) instead of sorting every weight. */
static int share_cap(const u128 *w, Py_ssize_t n, int percent, u128 *cap) {
    *cap = 0;
    if (!percent || !n) return 0;
    u128 total = 0, top = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        total += w[i];
        if (w[i] > top) top = w[i];
    }
    if (top * 100 <= (u128)percent * total) return 0;
    Py_ssize_t m = 100 / percent + 2;
    if (m > n) m = n;
    u128 *ordered = PyMem_Malloc(sizeof(u128) * (size_t)m);
    if (!ordered) return -1;
    Py_ssize_t kept = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        u128 x = w[i];
        if (kept == m && x <= ordered[m - 1]) continue;
        Py_ssize_t j = kept < m ? kept++ : m - 1;
        while (j > 0 && ordered[j - 1] < x) {
            ordered[j] = ordered[j - 1];
            j--;
        }
        ordered[j] = x;
    }
    u128 rest = total;
    for (Py_ssize_t k = 1; k <= n; k++) {
        rest -= ordered[k - 1];
        long long den = 100 - (long long)percent * k;
        if (den <= 0 || k == n) {
            *cap = ordered[k - 1];
            break;
        }
        u128 c = (u128)percent * rest / (u128)den;
        if (ordered[k] <= c) {
            *cap = c;
            break;
        }
    }
    PyMem_Free(ordered);
    return 1;
}

/* A token's feature hash and IDF: from the cache (token -> 12 bytes: the hash, then the IDF, in
 * native order), else BLAKE2b-64 and the open-addressing IDF table (what IdfTable.get_hashed
 * does), then cached. The cache is emptied when it reaches CACHE_LIMIT entries. */
#define CACHE_LIMIT 65536

static int lookup(PyObject *token, PyObject *cache, const uint64_t *kv, const uint8_t *vv,
                  int vsize, uint64_t mask, Py_ssize_t nslots, uint64_t median, uint64_t *key,
                  uint32_t *idf) {
    PyObject *hit = PyDict_GetItemWithError(cache, token);
    if (hit && PyBytes_Check(hit) && PyBytes_GET_SIZE(hit) == 12) {
        memcpy(key, PyBytes_AS_STRING(hit), 8);
        memcpy(idf, PyBytes_AS_STRING(hit) + 8, 4);
        return 0;
    }
    if (!hit && PyErr_Occurred()) return -1;
    Py_ssize_t len;
    const char *utf8 = PyUnicode_AsUTF8AndSize(token, &len);
    if (!utf8) return -1;
    *key = blake2b64((const uint8_t *)utf8, (size_t)len);
    *idf = (uint32_t)median;
    uint64_t i = *key & mask;
    for (Py_ssize_t probes = 0; probes < nslots; probes++) {
        uint64_t k = kv[i];
        if (k == *key) {
            *idf = vsize == 2 ? ((const uint16_t *)vv)[i] : ((const uint32_t *)vv)[i];
            break;
        }
        if (!k) break;
        i = (i + 1) & mask;
    }
    char packed[12];
    memcpy(packed, key, 8);
    memcpy(packed + 8, idf, 4);
    PyObject *entry = PyBytes_FromStringAndSize(packed, 12);
    if (!entry) return -1;
    if (PyDict_GET_SIZE(cache) >= CACHE_LIMIT) PyDict_Clear(cache);
    int err = PyDict_SetItem(cache, token, entry);
    Py_DECREF(entry);
    return err;
}

/* Largest IDF x token count (in units) the 128-bit sums take: weights below 2**96, at most
 * 2**20 of them (the tokens of max_chars characters). Beyond: None, the Python path. */
#define MAX_BASE ((u128)1 << 32)
#define MAX_FEATURES ((Py_ssize_t)1 << 20)
#define TF_SCALE 1000

static PyObject *py_fingerprint(PyObject *self, PyObject *args) {
    PyObject *tokens, *cache;
    Py_buffer keys, values;
    unsigned long long mask;
    long long median, max_count;
    Py_ssize_t plateau;
    int max_share, weight_bits;
    if (!PyArg_ParseTuple(args, "y*y*KLnLiiO!O!", &keys, &values, &mask, &median, &plateau,
                          &max_count, &max_share, &weight_bits, &PyDict_Type, &cache,
                          &PyList_Type, &tokens))
        return NULL;
    PyObject *result = NULL;
    Slot *table = NULL;
    Py_ssize_t *order = NULL;
    u128 *weights = NULL;
    uint64_t *hashes = NULL;

    Py_ssize_t nslots = keys.len / 8;
    int vsize = nslots ? (int)(values.len / nslots) : 0;
    if (keys.len % 8 || (uint64_t)nslots != mask + 1 || (vsize != 2 && vsize != 4) ||
        values.len != (Py_ssize_t)vsize * nslots || median < 0 || median > 0xFFFFFFFFLL || plateau < 0 || max_count < 0 ||
        max_share < 0 || max_share > 100 || weight_bits < 1 || weight_bits > 40) {
        PyErr_SetString(PyExc_ValueError, "inconsistent IDF table or configuration");
        goto done;
    }
    const uint64_t *kv = (const uint64_t *)keys.buf;
    const uint8_t *vv = (const uint8_t *)values.buf;

    Py_ssize_t n = PyList_GET_SIZE(tokens);
    if (n > MAX_FEATURES) {
        result = Py_NewRef(Py_None);
        goto done;
    }
    size_t cap = 16;
    while (cap < (size_t)n * 2) cap <<= 1;
    table = PyMem_Calloc(cap, sizeof(Slot));
    order = PyMem_Malloc(sizeof(Py_ssize_t) * (size_t)(n ? n : 1));
    if (!table || !order) {
        PyErr_NoMemory();
        goto done;
    }
    int plain = plateau == 0 || n <= plateau;
    Py_ssize_t nf = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *tok = PyList_GET_ITEM(tokens, i);
        if (!PyUnicode_Check(tok)) {
            PyErr_SetString(PyExc_TypeError, "tokens must be str");
            goto done;
        }
        if (!READY(tok)) goto done;
        Py_hash_t h = PyObject_Hash(tok);
        if (h == -1) goto done;
        int64_t add = (plain || i < plateau) ? TF_SCALE : (int64_t)TF_SCALE * plateau / (i + 1);
        size_t j = (size_t)h & (cap - 1);
        while (table[j].token && !(table[j].hash == h && same_str(table[j].token, tok)))
            j = (j + 1) & (cap - 1);
        if (!table[j].token) {
            table[j].token = tok;
            table[j].hash = h;
            order[nf++] = (Py_ssize_t)j;
        }
        table[j].count += add;
    }

    weights = PyMem_Malloc(sizeof(u128) * (size_t)(nf ? nf : 1));
    hashes = PyMem_Malloc(sizeof(uint64_t) * (size_t)(nf ? nf : 1));
    if (!weights || !hashes) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t f = 0; f < nf; f++) {
        Slot *s = &table[order[f]];
        uint64_t key;
        uint32_t idf;
        if (lookup(s->token, cache, kv, vv, vsize, mask, nslots, (uint64_t)median, &key, &idf) < 0)
            goto done;
        int64_t tf = s->count < max_count ? s->count : max_count;
        u128 base = (u128)idf * (u128)tf / TF_SCALE;
        if (base >= MAX_BASE) {
            result = Py_NewRef(Py_None);
            goto done;
        }
        hashes[f] = key;
        weights[f] = base * base * base;
    }

    u128 capw;
    int capped = share_cap(weights, nf, max_share, &capw);
    if (capped < 0) {
        PyErr_NoMemory();
        goto done;
    }
    u128 total = 0;
    for (Py_ssize_t f = 0; f < nf; f++) {
        if (capped && weights[f] > capw) weights[f] = capw;
        total += weights[f];
    }
    int shift = (int)bit_length128(total) - weight_bits;
    if (shift > 0) {
        total = 0;
        for (Py_ssize_t f = 0; f < nf; f++) {
            weights[f] >>= shift;
            total += weights[f];
        }
    }
    /* lane b: the weight of the features with bit b set; the bit is set when that is more than
     * half of the total */
    uint64_t lanes[64] = {0};
    for (Py_ssize_t f = 0; f < nf; f++) {
        uint64_t w = (uint64_t)weights[f], key = hashes[f];
        for (int b = 0; b < 64; b++) lanes[b] += ((key >> b) & 1) ? w : 0;
    }
    uint64_t half = (uint64_t)(total / 2) + 1, value = 0;
    for (int b = 0; b < 64; b++)
        if (lanes[b] >= half) value |= (uint64_t)1 << b;
    result = Py_BuildValue("(Kn)", (unsigned long long)value, nf);

done:
    PyMem_Free(table);
    PyMem_Free(order);
    PyMem_Free(weights);
    PyMem_Free(hashes);
    PyBuffer_Release(&keys);
    PyBuffer_Release(&values);
    return result;
}

/* ---- CJK runs and gap words (text.py's cjk_text_and_gap_words) ------------------------------ */

static int is_cjk(Py_UCS4 c) { return (c >= 0x3400 && c <= 0x4DBF) || (c >= 0x4E00 && c <= 0x9FFF); }

/* a character of Python re's \w other than "_" (CJK excluded by the caller) */
static int is_word(Py_UCS4 c) { return c != '_' && Py_UNICODE_ISALNUM(c); }

static PyObject *nfkc = NULL; /* unicodedata.normalize, imported on first use */

/* normalize_word() and keep_word() of text.py: the word, or Py_None when it is not kept */
static PyObject *kept_word(PyObject *text, Py_ssize_t start, Py_ssize_t end) {
    PyObject *word = PyUnicode_Substring(text, start, end), *out;
    if (!word) return NULL;
    if (PyUnicode_IS_ASCII(word)) {
        out = PyObject_CallMethod(word, "lower", NULL); /* casefold() of ASCII */
    } else {
        if (!nfkc) {
            PyObject *mod = PyImport_ImportModule("unicodedata");
            if (!mod) goto fail;
            nfkc = PyObject_GetAttrString(mod, "normalize");
            Py_DECREF(mod);
            if (!nfkc) goto fail;
        }
        PyObject *norm = PyObject_CallFunction(nfkc, "sO", "NFKC", word);
        if (!norm) goto fail;
        out = PyObject_CallMethod(norm, "casefold", NULL);
        Py_DECREF(norm);
    }
    Py_DECREF(word);
    if (!out) return NULL;
    Py_ssize_t n = PyUnicode_GET_LENGTH(out);
    int digits = n > 0;
    for (Py_ssize_t i = 0; i < n && digits; i++)
        digits = Py_UNICODE_ISDIGIT(PyUnicode_READ_CHAR(out, i));
    if (n > 1 && !digits) return out;
    Py_DECREF(out);
    return Py_NewRef(Py_None);
fail:
    Py_DECREF(word);
    return NULL;
}

static PyObject *py_cjk_text_and_gap_words(PyObject *self, PyObject *text) {
    if (!PyUnicode_Check(text)) {
        PyErr_SetString(PyExc_TypeError, "text must be str");
        return NULL;
    }
    if (!READY(text)) return NULL;
    Py_ssize_t n = PyUnicode_GET_LENGTH(text);
    int kind = PyUnicode_KIND(text);
    const void *data = PyUnicode_DATA(text);
    Py_UCS4 *buf = PyMem_Malloc(sizeof(Py_UCS4) * (size_t)(n + 1));
    PyObject *gaps = PyList_New(0), *joined = NULL, *result = NULL;
    if (!buf || !gaps) {
        PyErr_NoMemory();
        goto done;
    }
    Py_ssize_t len = 0, any_words = 0, i = 0;
    while (i < n) {
        Py_UCS4 c = PyUnicode_READ(kind, data, i);
        if (is_cjk(c)) {
            buf[len++] = c;
            i++;
            continue;
        }
        /* a gap: the maximal run of other characters, one space in the joined text */
        buf[len++] = ' ';
        PyObject *words = PyList_New(0);
        if (!words) goto done;
        while (i < n && !is_cjk(c = PyUnicode_READ(kind, data, i))) {
            if (!is_word(c)) {
                i++;
                continue;
            }
            Py_ssize_t start = i, wordish = 0;
            while (i < n && is_word(c = PyUnicode_READ(kind, data, i)) && !is_cjk(c)) {
                if (!Py_UNICODE_ISDECIMAL(c)) wordish = 1;
                i++;
            }
            if (!wordish) continue; /* decimal digits only: a number, never kept */
            PyObject *w = kept_word(text, start, i);
            if (!w || (w != Py_None && PyList_Append(words, w) < 0)) {
                Py_XDECREF(w);
                Py_DECREF(words);
                goto done;
            }
            Py_DECREF(w);
        }
        any_words += PyList_GET_SIZE(words);
        int err = PyList_Append(gaps, words);
        Py_DECREF(words);
        if (err < 0) goto done;
    }
    joined = PyUnicode_FromKindAndData(PyUnicode_4BYTE_KIND, buf, len);
    if (!joined) goto done;
    result = any_words ? PyTuple_Pack(2, joined, gaps) : PyTuple_Pack(2, joined, Py_None);
done:
    PyMem_Free(buf);
    Py_XDECREF(gaps);
    Py_XDECREF(joined);
    return result;
}

static PyMethodDef methods[] = {
    {"cjk_text_and_gap_words", py_cjk_text_and_gap_words, METH_O,
     "cjk_text_and_gap_words(text) -> (joined CJK runs, gap words or None), as in text.py"},
    {"fingerprint", py_fingerprint, METH_VARARGS,
     "fingerprint(keys, values, mask, median, plateau, max_count, max_share, weight_bits, cache,"
     " tokens)"
     " -> (value, features), or None when the weights are too large for 128-bit sums"},
    {"blake2b64", py_blake2b64, METH_O,
     "blake2b64(data) -> int.from_bytes(blake2b(data, digest_size=8).digest(), 'big')"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_cfingerprint",
    "The fingerprint's per-document arithmetic in C (see fingerprinter.py).", -1, methods,
};

PyMODINIT_FUNC PyInit__cfingerprint(void) {
    return speedups_module(&module);
}

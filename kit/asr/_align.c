/* sclite's alignment of two token sequences, compiled: kit/asr/align.py's dynamic programme.
 *
 * ops(ref, hyp, block) takes the two sequences as buffers of 32-bit token ids and returns
 * the alignment's steps as bytes, first to last: b'C' correct, b'S' substitution,
 * b'D' deletion, b'I' insertion. The weights (substitution 4, insertion and deletion 3)
 * and the tie order (a match or substitution first, then a deletion, then an insertion)
 * are sclite's, as kit/asr/align.py's pure-Python `_ops` has them; tests compare the two.
 *
 * Memory is linear in the longer sequence: the costs are kept one row at a time, and the
 * moves (a byte a cell) for at most `block` cells. A larger problem is done in blocks of
 * rows: a first pass keeps the cost row at each block's start, and the way back recomputes
 * one block's moves at a time from there, which gives the same moves, so the same
 * alignment, for about twice the arithmetic.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

enum { SUB = 4, INS = 3, DEL = 3 };
enum { DIAGONAL = 0, DELETED = 1, INSERTED = 2 };

/* Advance `cost` (row i0 of the table) by rows i0+1..i1; write their moves to `moves`
 * (one row of m+1 bytes each) when it is not NULL. */
static void rows(const int32_t *ref, const int32_t *hyp, Py_ssize_t m, Py_ssize_t i0,
                 Py_ssize_t i1, int64_t *cost, uint8_t *moves) {
    for (Py_ssize_t i = i0 + 1; i <= i1; i++) {
        int32_t word = ref[i - 1];
        int64_t diagonal_from = cost[0];
        int64_t left = (int64_t)i * DEL;
        cost[0] = left;
        uint8_t *row = moves ? moves + (i - i0 - 1) * (m + 1) : NULL;
        if (row) row[0] = DELETED;
        for (Py_ssize_t j = 1; j <= m; j++) {
            int64_t above = cost[j];
            int64_t diagonal = diagonal_from + (word == hyp[j - 1] ? 0 : SUB);
            int64_t deleted = above + DEL, inserted = left + INS;
            uint8_t move;
            if (diagonal <= deleted && diagonal <= inserted) {
                left = diagonal;
                move = DIAGONAL;
            } else if (deleted < inserted) {
                left = deleted;
                move = DELETED;
            } else {
                left = inserted;
                move = INSERTED;
            }
            if (row) row[j] = move;
            diagonal_from = above;
            cost[j] = left;
        }
    }
}

static PyObject *ops(PyObject *self, PyObject *args) {
    Py_buffer ref_buf, hyp_buf;
    Py_ssize_t block;
    if (!PyArg_ParseTuple(args, "y*y*n", &ref_buf, &hyp_buf, &block)) return NULL;
    PyObject *out = NULL;
    int64_t *cost = NULL, *marks = NULL;
    uint8_t *moves = NULL;
    char *steps = NULL;
    const int32_t *ref = ref_buf.buf, *hyp = hyp_buf.buf;
    Py_ssize_t n = ref_buf.len / 4, m = hyp_buf.len / 4;
    /* Rows a block: as many as `block` cells hold, at least one. */
    Py_ssize_t height = block / (m + 1);
    if (height < 1) height = 1;
    if (height > n) height = n;
    Py_ssize_t blocks = n == 0 ? 0 : (n + height - 1) / height;
    /* The raw allocator: tracemalloc sees what the alignment takes. */
    cost = PyMem_RawMalloc(sizeof(int64_t) * (m + 1));
    marks = PyMem_RawMalloc(sizeof(int64_t) * (m + 1) * (blocks > 1 ? blocks : 1));
    moves = PyMem_RawMalloc((size_t)(m + 1) * (height > 0 ? height : 1));
    steps = PyMem_RawMalloc((size_t)(n + m) + 1);
    if (!cost || !marks || !moves || !steps) {
        PyErr_NoMemory();
        goto done;
    }
    Py_ssize_t k = 0;  /* steps written, last first */
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t j = 0; j <= m; j++) cost[j] = (int64_t)j * INS;
    /* The first pass keeps each block's starting row (a single block needs none). */
    if (blocks > 1) {
        for (Py_ssize_t b = 0; b < blocks; b++) {
            memcpy(marks + b * (m + 1), cost, sizeof(int64_t) * (m + 1));
            Py_ssize_t top = b * height, bottom = top + height < n ? top + height : n;
            if (b + 1 < blocks) rows(ref, hyp, m, top, bottom, cost, NULL);
        }
    } else {
        memcpy(marks, cost, sizeof(int64_t) * (m + 1));
    }
    Py_ssize_t i = n, j = m;
    for (Py_ssize_t b = blocks - 1; b >= 0; b--) {
        Py_ssize_t top = b * height, bottom = top + height < n ? top + height : n;
        memcpy(cost, marks + b * (m + 1), sizeof(int64_t) * (m + 1));
        rows(ref, hyp, m, top, bottom, cost, moves);
        while (i > top) {
            uint8_t move = j == 0 ? DELETED : moves[(i - top - 1) * (m + 1) + j];
            if (move == DIAGONAL) {
                i--, j--;
                steps[k++] = ref[i] == hyp[j] ? 'C' : 'S';
            } else if (move == DELETED) {
                i--;
                steps[k++] = 'D';
            } else {
                j--;
                steps[k++] = 'I';
            }
        }
    }
    while (j > 0) {  /* row 0: what is left of the hypothesis was inserted */
        j--;
        steps[k++] = 'I';
    }
    for (Py_ssize_t a = 0, z = k - 1; a < z; a++, z--) {
        char swap = steps[a];
        steps[a] = steps[z];
        steps[z] = swap;
    }
    Py_END_ALLOW_THREADS
    out = PyBytes_FromStringAndSize(steps, k);
done:
    PyMem_RawFree(cost);
    PyMem_RawFree(marks);
    PyMem_RawFree(moves);
    PyMem_RawFree(steps);
    PyBuffer_Release(&ref_buf);
    PyBuffer_Release(&hyp_buf);
    return out;
}

static PyMethodDef methods[] = {
    {"ops", ops, METH_VARARGS,
     "ops(ref, hyp, block) -> bytes: sclite's alignment of two int32 token buffers, as "
     "b'C', b'S', b'D', b'I' steps; moves kept for at most `block` cells at a time."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_align", NULL, -1, methods};

PyMODINIT_FUNC PyInit__align(void) { return PyModule_Create(&module); }

/* The filesystem observation's receive loop, compiled: the one hot path containment has.
 *
 * An `rm -rf` is one notification per file, and the agent waits for each answer. In Python
 * the receive, the path read, the directory lookup and the answer cost ~50 us a file, three
 * times the unlink itself; here they cost what the system calls cost. fsobserve.py stays the
 * reference: it builds the table this loop follows (which argument holds which path, its
 * directory and its flags), takes every call this loop hands back (ftruncate, openat2, the
 * network calls), and is what runs where this module was not built.
 *
 * observe(listener, shapes, unresolved, sink) -> (errno, None) | (0, notification bytes)
 *
 * Receives notifications until one that is not a simple filesystem call arrives (returned
 * whole, as the 80 bytes of struct seccomp_notif, for the supervisor to dispatch) or the
 * receive fails (its errno returned). Each filesystem call is read, answered CONTINUE, and,
 * when the answer reached a live task, appended to `sink` as fsobserve's raw event:
 * (nr, flags, ((path bytes | None, directory str | None), ...), time.monotonic()).
 * The GIL is released throughout, and taken only to append an event, after its answer.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <errno.h>
#include <linux/audit.h>
#include <linux/seccomp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#define SYSCALLS 512      /* x86_64 numbers below the x32 bit; the table's length */
#define SHAPE_BYTES 6     /* per number: paths, path0, dirfd0, path1, dirfd1, flags */
#define NONE 0xFF         /* no argument (a dirfd of NONE: relative to the cwd) */
#define PATH_LIMIT 4096   /* fsobserve's limit: a path with no NUL within it is unreadable */
#define AT_FDCWD_ (-100)

typedef struct {
    int readable;                /* 0: the path could not be read */
    size_t length;
    char text[PATH_LIMIT];
    int relative;
    int resolved;                /* the directory a relative path is relative to was found */
    ssize_t base_length;
    char base[PATH_LIMIT];
} path_t;

static __u64 page_size = 4096;

static int low_int(__u64 value) { return (int)(__u32)value; }

/* The NUL-terminated string at `address` in task `tid`, read a page at a time (a read that
 * crosses into an unmapped page fails whole). */
static int read_string(pid_t tid, __u64 address, path_t *path) {
    size_t have = 0;
    if (address == 0) return 0;
    while (have < PATH_LIMIT) {
        __u64 at = address + have;
        size_t length = (size_t)(page_size - at % page_size);
        if (length > PATH_LIMIT - have) length = PATH_LIMIT - have;
        struct iovec local = {path->text + have, length};
        struct iovec remote = {(void *)(uintptr_t)at, length};
        ssize_t got = process_vm_readv(tid, &local, 1, &remote, 1, 0);
        if (got <= 0) return 0;
        char *end = memchr(path->text + have, '\0', (size_t)got);
        if (end != NULL) {
            path->length = (size_t)(end - path->text);
            return 1;
        }
        have += (size_t)got;
    }
    return 0;
}

/* The directory `dirfd` of task `tid` names (its cwd for AT_FDCWD), before the answer: the
 * agent may close it right after. */
static int resolve_base(pid_t tid, int dirfd, path_t *path) {
    char link[64];
    if (dirfd == AT_FDCWD_)
        snprintf(link, sizeof link, "/proc/%d/cwd", (int)tid);
    else
        snprintf(link, sizeof link, "/proc/%d/fd/%d", (int)tid, dirfd);
    path->base_length = readlink(link, path->base, sizeof path->base);
    return path->base_length > 0 && path->base_length < (ssize_t)sizeof path->base;
}

static PyObject *path_pair(const path_t *path, PyObject *unresolved) {
    PyObject *raw, *base;
    if (!path->readable) {
        raw = Py_NewRef(Py_None);
    } else {
        raw = PyBytes_FromStringAndSize(path->text, (Py_ssize_t)path->length);
        if (raw == NULL) return NULL;
    }
    if (!path->readable || !path->relative)
        base = Py_NewRef(Py_None);
    else if (!path->resolved)
        base = Py_NewRef(unresolved);
    else
        base = PyUnicode_DecodeFSDefaultAndSize(path->base, path->base_length);
    if (base == NULL) {
        Py_DECREF(raw);
        return NULL;
    }
    return Py_BuildValue("(NN)", raw, base);
}

static int append_event(PyObject *sink, int nr, int flags, const path_t *paths, int count,
                        double at, PyObject *unresolved) {
    PyObject *pairs = PyTuple_New(count);
    if (pairs == NULL) return -1;
    for (int i = 0; i < count; i++) {
        PyObject *pair = path_pair(&paths[i], unresolved);
        if (pair == NULL) {
            Py_DECREF(pairs);
            return -1;
        }
        /* PyTuple_SetItem, not the macro: the stable ABI (setup.py) has only the function */
        if (PyTuple_SetItem(pairs, i, pair) != 0) {
            Py_DECREF(pairs);
            return -1;
        }
    }
    PyObject *event = Py_BuildValue("(iiNd)", nr, flags, pairs, at);
    if (event == NULL) return -1;
    int failed = PyList_Append(sink, event);
    Py_DECREF(event);
    return failed;
}

static double monotonic(void) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (double)now.tv_sec + (double)now.tv_nsec * 1e-9;
}

static PyObject *observe(PyObject *module, PyObject *args) {
    int listener;
    Py_buffer shapes;
    PyObject *unresolved, *sink;
    if (!PyArg_ParseTuple(args, "iy*UO!", &listener, &shapes, &unresolved, &PyList_Type, &sink))
        return NULL;
    if (shapes.len != SYSCALLS * SHAPE_BYTES) {
        PyBuffer_Release(&shapes);
        return PyErr_Format(PyExc_ValueError, "shapes must be %d bytes", SYSCALLS * SHAPE_BYTES);
    }
    const unsigned char *table = shapes.buf;
    struct seccomp_notif notif;
    struct seccomp_notif_resp answer;
    int code = 0, handed_back = 0, failed = 0;
    /* Per call, not static: flows run in parallel, each with its own receiver thread.
     * malloc, not PyMem_RawMalloc: the stable ABI (setup.py) does not offer the latter. */
    path_t *paths = malloc(2 * sizeof(path_t));
    if (paths == NULL) {
        PyBuffer_Release(&shapes);
        return PyErr_NoMemory();
    }

    PyThreadState *released = PyEval_SaveThread();
    for (;;) {
        memset(&notif, 0, sizeof notif);  /* the kernel refuses a buffer that is not zeroed */
        if (ioctl(listener, SECCOMP_IOCTL_NOTIF_RECV, &notif) != 0) {
            code = errno;
            break;
        }
        unsigned nr = (unsigned)notif.data.nr;
        const unsigned char *shape = nr < SYSCALLS ? table + nr * SHAPE_BYTES : NULL;
        if (notif.data.arch != AUDIT_ARCH_X86_64 || shape == NULL || shape[0] == 0) {
            handed_back = 1;
            break;
        }
        int count = shape[0] > 2 ? 2 : shape[0];
        for (int i = 0; i < count; i++) {
            path_t *path = &paths[i];
            unsigned char at = shape[1 + 2 * i], dirfd_at = shape[2 + 2 * i];
            path->readable = at < 6 && read_string((pid_t)notif.pid, notif.data.args[at], path);
            path->relative = path->readable && path->text[0] != '/';
            if (path->relative) {
                int dirfd = dirfd_at == NONE ? AT_FDCWD_ : low_int(notif.data.args[dirfd_at % 6]);
                path->resolved = resolve_base((pid_t)notif.pid, dirfd, path);
            }
        }
        unsigned char flags_at = shape[5];
        int flags = flags_at == NONE ? 0 : low_int(notif.data.args[flags_at % 6]);
        /* No ID_VALID: an answer to a task that has gone fails (ENOENT), which says the same,
         * and then the facts (read from whatever now has that pid) are dropped. */
        memset(&answer, 0, sizeof answer);
        answer.id = notif.id;
        answer.flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE;
        if (ioctl(listener, SECCOMP_IOCTL_NOTIF_SEND, &answer) != 0) {
            if (errno == ENOENT) continue;
            handed_back = 1;  /* unanswered: the supervisor answers it, and says why */
            break;
        }
        double when = monotonic();
        PyEval_RestoreThread(released);
        failed = append_event(sink, (int)nr, flags, paths, count, when, unresolved);
        released = PyEval_SaveThread();
        if (failed) break;
    }
    PyEval_RestoreThread(released);
    free(paths);
    PyBuffer_Release(&shapes);
    if (failed) return NULL;
    if (handed_back)
        return Py_BuildValue("(iy#)", 0, (const char *)&notif, (Py_ssize_t)sizeof notif);
    return Py_BuildValue("(iO)", code, Py_None);
}

static PyMethodDef methods[] = {
    {"observe", observe, METH_VARARGS,
     "observe(listener, shapes, unresolved, sink) -> (errno, None) | (0, notification)"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    .m_base = PyModuleDef_HEAD_INIT,
    .m_name = "_fsloop",
    .m_doc = "The filesystem observation's receive loop, compiled (see fsobserve.py).",
    .m_size = -1,
    .m_methods = methods,
};

PyMODINIT_FUNC PyInit__fsloop(void) {
    long page = sysconf(_SC_PAGESIZE);
    if (page > 0) page_size = (__u64)page;
    _Static_assert(sizeof(struct seccomp_notif) == 80, "struct seccomp_notif is 80 bytes");
    return PyModule_Create(&module);
}

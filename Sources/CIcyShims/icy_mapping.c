#define _GNU_SOURCE
#include "icy_shims.h"
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* The registry the SIGBUS handler reads. A slot is claimed with a compare-and-swap on `used`,
   then its bounds are published; the handler only reads the bounds (atomic loads, no locks, no
   allocation: it runs inside a signal). A slot is cleared before its mapping goes. */
#define ICY_MAPPING_SLOTS 1024

typedef struct {
    atomic_int used;
    atomic_uintptr_t start, end;
    atomic_ulong faults;
} icy_mapping_slot;

static icy_mapping_slot slots[ICY_MAPPING_SLOTS];
static struct sigaction previous_bus_action;
static pthread_once_t install_once = PTHREAD_ONCE_INIT;
static int install_failed;
static uintptr_t page_size;

static void icy_bus_handler(int sig, siginfo_t *info, void *context) {
    (void)context;
    uintptr_t address = (uintptr_t)info->si_addr;
    for (int i = 0; i < ICY_MAPPING_SLOTS; i++) {
        uintptr_t start = atomic_load_explicit(&slots[i].start, memory_order_acquire);
        uintptr_t end = atomic_load_explicit(&slots[i].end, memory_order_acquire);
        if (start == 0 || address < start || address >= end) continue;
        /* A page of the file that is no longer there: the same addresses now read zeros. mmap is
           a plain system call on Linux and safe here (POSIX does not list it as async-signal-safe,
           glibc's wrapper keeps no state). The faulting instruction is run again and succeeds. */
        void *page = (void *)(address & ~(page_size - 1));
        if (mmap(page, page_size, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) != MAP_FAILED) {
            atomic_fetch_add_explicit(&slots[i].faults, 1, memory_order_relaxed);
            return;
        }
        break;
    }
    /* Not one of ours (or no page could be put there): the previous disposition takes the fault
       when the instruction runs again, as if this handler had never been installed. */
    sigaction(sig, &previous_bus_action, NULL);
}

static void icy_install_bus_handler(void) {
    page_size = (uintptr_t)sysconf(_SC_PAGESIZE);
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_sigaction = icy_bus_handler;
    action.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigemptyset(&action.sa_mask);
    install_failed = sigaction(SIGBUS, &action, &previous_bus_action) != 0;
}

int icy_map_file(int fd, size_t length, const void **base) {
    if (length == 0) { errno = EINVAL; return -1; }
    pthread_once(&install_once, icy_install_bus_handler);
    if (install_failed) { errno = ENOTSUP; return -1; }
    int slot = -1;
    for (int i = 0; i < ICY_MAPPING_SLOTS; i++) {
        int expected = 0;
        if (atomic_compare_exchange_strong(&slots[i].used, &expected, 1)) { slot = i; break; }
    }
    if (slot < 0) { errno = EBUSY; return -1; }
    void *p = mmap(NULL, length, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
        int saved = errno;
        atomic_store(&slots[slot].used, 0);
        errno = saved;
        return -1;
    }
    atomic_store_explicit(&slots[slot].faults, 0, memory_order_relaxed);
    atomic_store_explicit(&slots[slot].end, (uintptr_t)p + length, memory_order_release);
    atomic_store_explicit(&slots[slot].start, (uintptr_t)p, memory_order_release);
    *base = p;
    return slot;
}

unsigned long icy_mapping_faults(int slot) {
    return atomic_load_explicit(&slots[slot].faults, memory_order_relaxed);
}

int icy_mapping_advise(int slot, size_t offset, size_t length, int advice) {
    uintptr_t start = atomic_load_explicit(&slots[slot].start, memory_order_relaxed);
    uintptr_t end = atomic_load_explicit(&slots[slot].end, memory_order_relaxed);
    uintptr_t from = (start + offset + page_size - 1) & ~(page_size - 1);
    uintptr_t to = start + offset + length;
    if (to > end) to = end;
    to &= ~(page_size - 1);
    if (from >= to) return 0;
    return madvise((void *)from, to - from, advice);
}

void icy_unmap_file(int slot) {
    uintptr_t start = atomic_load(&slots[slot].start);
    uintptr_t end = atomic_load(&slots[slot].end);
    atomic_store(&slots[slot].start, 0);
    atomic_store(&slots[slot].end, 0);
    if (start) munmap((void *)start, end - start);
    atomic_store(&slots[slot].used, 0);
}

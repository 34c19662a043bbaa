#if canImport(Glibc)
import Glibc
#endif
import CIcyShims

/// Starts a thread that runs `body`, which it holds (and all `body` captures) until `body`
/// returns; nil when no thread can be started. The pipeline's helper threads (export,
/// decryption), and `diff`'s feed of a FIFO, start here. `name` (at most 15 bytes: the kernel's
/// limit) is what top -H, perf and /proc/PID/task/*/comm show for it (bench/thread-times reads
/// each thread's times by it).
public func startThread(named name: String, _ body: @escaping () -> Void) -> pthread_t? {
    let context = Unmanaged.passRetained(ThreadBody(name: name, body)).toOpaque()
    var t = pthread_t()
    let rc = pthread_create(&t, nil, { context in
        Unmanaged<ThreadBody>.fromOpaque(context!).takeRetainedValue().run()
        return nil
    }, context)
    guard rc == 0 else {
        Unmanaged<ThreadBody>.fromOpaque(context).release()
        return nil
    }
    return t
}

private final class ThreadBody {
    let name: String
    let body: () -> Void
    init(name: String, _ body: @escaping () -> Void) { self.name = name; self.body = body }
    func run() {
        _ = icy_name_this_thread(name)
        body()
    }
}

/// The one mutex of the code base: a pthread mutex in memory of its own. A `pthread_mutex_t`
/// stored as a property and passed as `&mutex` has no stable address in Swift (the inout
/// argument may be a temporary copy), so the mutex lives behind a pointer the lock owns. A
/// thread that waits for another's hand-over uses a `Monitor`: a lock with a condition on it.
public final class Lock: @unchecked Sendable {
    /// For `Monitor`'s condition, which waits on this mutex.
    fileprivate let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)

    public init() { pthread_mutex_init(mutex, nil) }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    public func withLock<T>(_ body: () throws -> T) rethrows -> T {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body()
    }
}

/// A `Lock` and a condition variable on it, the condition in memory of its own as the lock's
/// mutex is (NIO's ConditionLock): the hand-overs between the pipeline's thread and its helper
/// threads (export, decryption), where one side waits until the other changed what the lock
/// guards. `lock`/`unlock` around the waits, since a wait's predicate reads what the lock guards
/// (`while …  { wait() }`).
final class Monitor: @unchecked Sendable {
    private let inner = Lock()
    private let changed = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)

    init() { pthread_cond_init(changed, nil) }

    deinit {
        pthread_cond_destroy(changed)
        changed.deallocate()
    }

    @inline(__always) func lock() { pthread_mutex_lock(inner.mutex) }
    @inline(__always) func unlock() { pthread_mutex_unlock(inner.mutex) }
    /// Lets go of the lock until another thread's `broadcast`, then holds it again (called with
    /// it held; may also wake without one: wait in a loop over the predicate).
    @inline(__always) func wait() { pthread_cond_wait(changed, inner.mutex) }
    /// Wakes every thread in `wait` (called with the lock held).
    @inline(__always) func broadcast() { pthread_cond_broadcast(changed) }

    @inline(__always) func withLock<T>(_ body: () throws -> T) rethrows -> T { try inner.withLock(body) }
}

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
/// argument may be a temporary copy), so the mutex lives behind a pointer the lock owns.
public final class Lock: @unchecked Sendable {
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)

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

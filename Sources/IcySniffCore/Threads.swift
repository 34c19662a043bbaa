#if canImport(Glibc)
import Glibc
#endif

/// Starts a thread that runs `body`, which it holds (and all `body` captures) until `body`
/// returns; nil when no thread can be started. The pipeline's helper threads (export,
/// decryption), and `diff`'s feed of a FIFO, start here.
public func startThread(_ body: @escaping () -> Void) -> pthread_t? {
    let context = Unmanaged.passRetained(ThreadBody(body)).toOpaque()
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
    let run: () -> Void
    init(_ run: @escaping () -> Void) { self.run = run }
}

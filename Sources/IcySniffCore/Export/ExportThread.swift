#if canImport(Glibc)
import Glibc
#endif

/// Runs a sink on a thread of its own, so the export stage (cache judgement, encoding, writing)
/// overlaps with reading, reassembly and parsing — as Zeek runs each log writer in a thread of
/// its own.
///
/// Input: the `TransactionSink` calls of the pipeline, on the pipeline's thread. Output: the same
/// calls, in the same order, on the export thread. They are handed over in batches through a
/// bounded queue — at most 8 batches of 128 transactions, and at most 8 MiB of kept bodies
/// (`--bodies`) and of compressed bodies whose inflate waits for this thread
/// (`Transaction.settleDecoding`) — so when the writer falls behind, the pipeline waits and memory stays flat. The
/// pipeline never touches a transaction once it is emitted, nor a connection once it is finished,
/// so handing them over moves their ownership; nothing else is shared.
///
/// Call `finish()` before using the sink again on the calling thread (its final `write`): it waits
/// until every call was made and stops the thread. Not for live captures, whose rows must appear
/// as they happen, not a batch later.
public final class ExportThread: TransactionSink {
    private enum Item {
        case transaction(Transaction)
        case connection(Connection)
        /// Boxed: the value is large, the other items one reference.
        indirect case secured(SecuredConnection)
    }

    private let sink: TransactionSink
    /// Filled by the pipeline's thread only, with the body bytes its transactions keep.
    private var batch: [Item] = []
    private var batchBytes = 0
    private static let batchSize = 128
    private static let batchBytesLimit = 1 << 20
    /// Batches waiting for the export thread, and their body bytes (guarded by `monitor`): at most
    /// `maxQueued` batches and `maxQueuedBytes` (a single larger batch is let through alone).
    private var queue: [(items: [Item], bytes: Int)] = []
    private var queuedBytes = 0
    private static let maxQueued = 8
    private static let maxQueuedBytes = 8 << 20
    /// With this many batches already waiting, a batch's whole-body inflates run on the
    /// pipeline's thread before it is handed over (`handOver`): NDJSON leaves the export thread
    /// idle half the time, HAR keeps it about as busy as the pipeline.
    private static let settleHereFrom = 2
    /// A transaction keeping this many body bytes is written before the pipeline reads on: two
    /// 16 MiB bodies were otherwise held at once, one being written while the next one was
    /// received (a gzip bomb with --bodies: 71.5 MiB). Costs the pipeline the time of writing
    /// a large body, a few milliseconds, where it happens.
    private static let writtenAloneBytes = 4 << 20
    /// The export thread is working through a batch (guarded by `monitor`).
    private var busy = false
    private var closing = false
    private let monitor = Monitor()
    private var thread: pthread_t? = nil
    /// Transactions whose inflates ran on the export thread (written there; read after `finish`).
    private(set) var settledHere = 0

    /// Starts the thread; nil when it cannot be started (the caller then uses the sink directly).
    public init?(sink: TransactionSink) {
        self.sink = sink
        batch.reserveCapacity(Self.batchSize)
        guard let t = startThread(named: "icy-export", { self.drain() }) else { return nil }
        thread = t
    }

    public func consume(_ transaction: Transaction) {
        // Compressed bodies whose inflate waits for this thread count as kept bytes.
        let bytes = transaction.keptBodyBytes + transaction.bytesToSettle
        batchBytes += bytes
        add(.transaction(transaction))
        if bytes >= Self.writtenAloneBytes {
            handOver()
            monitor.lock()
            while !queue.isEmpty || busy { monitor.wait() }
            monitor.unlock()
        }
    }
    public func connectionFinished(_ connection: Connection) { add(.connection(connection)) }
    public func connectionSecured(_ secured: SecuredConnection) { add(.secured(secured)) }

    @inline(__always) private func add(_ item: Item) {
        batch.append(item)
        if batch.count >= Self.batchSize || batchBytes >= Self.batchBytesLimit { handOver() }
    }

    private func handOver() {
        guard !batch.isEmpty else { return }
        monitor.lock()
        let behind = queue.count >= Self.settleHereFrom
        monitor.unlock()
        if behind {
            // The export thread is the slower one now: the inflates its transactions left to it
            // (`Transaction.settleDecoding`) run here instead. Where they run changes no output.
            for case .transaction(let t) in batch { t.settleDecoding() }
        }
        monitor.lock()
        while queue.count >= Self.maxQueued || (!queue.isEmpty && queuedBytes + batchBytes > Self.maxQueuedBytes) {
            monitor.wait()
        }
        queue.append((batch, batchBytes))
        queuedBytes += batchBytes
        monitor.broadcast()
        monitor.unlock()
        batch = []
        batch.reserveCapacity(Self.batchSize)
        batchBytes = 0
    }

    /// Hands over what is left, waits until the sink has consumed everything, stops the thread.
    public func finish() {
        guard let t = thread else { return }
        handOver()
        monitor.withLock { closing = true; monitor.broadcast() }
        pthread_join(t, nil)
        thread = nil
    }

    /// The export thread: takes batches in order until `finish`.
    private func drain() {
        while true {
            monitor.lock()
            while queue.isEmpty && !closing { monitor.wait() }
            if queue.isEmpty {
                monitor.unlock()
                return
            }
            var next = queue.removeFirst()
            queuedBytes -= next.bytes
            busy = true
            monitor.broadcast()
            monitor.unlock()
            for item in next.items {
                switch item {
                case .transaction(let t):
                    if t.settleDecoding() { settledHere += 1 }
                    sink.consume(t)
                case .connection(let c): sink.connectionFinished(c)
                case .secured(let s): sink.connectionSecured(s)
                }
            }
            // Released here, before the pipeline is told: a waiting pipeline reads on only
            // once the bodies are gone.
            next.items = []
            monitor.lock()
            busy = false
            monitor.broadcast()
            monitor.unlock()
        }
    }
}

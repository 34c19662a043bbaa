#if canImport(Glibc)
import Glibc
#endif

/// Takes the AEAD work of TLS application data and of QUIC 1-RTT packets off the pipeline's
/// thread, so that decrypting runs on the second core while the pipeline reads, reassembles and
/// parses.
///
/// Input: the records of directions whose handshake is over (`submit`), in the order the
/// pipeline reads them, and every later step of a TLS session's plaintext (`later`: what goes to
/// its inner HTTP session, a direction's end, the connection's end and its outputs). Output: the
/// same steps, run on the pipeline's thread in exactly the order they were asked for, each record
/// opened by then (`TLSSession.opened`). Steps are held only while a record before them is still
/// being opened, and delivered at points fixed by the capture alone (a batch's size, the number of
/// steps held), never by timing: every run gives the same outputs, and TLS sessions see the same
/// calls in the same order as when everything runs at once. Only the transactions of connections
/// nothing is decrypted for (cleartext ones, and the rows of encrypted connections no key opens)
/// may come before a held TLS one that completed earlier in the capture.
///
/// The thread starts once `startAfter` bytes of records were submitted: before that, and when
/// the thread cannot start, `submit` declines, the session opens the record itself, and nothing
/// is held. A small capture gains nothing from a thread.
///
/// Memory: at most `maxInFlight` + 1 batches of `batchBytes` of records (opened in place),
/// and the steps held behind them (at most `maxHeldSteps` per batch).
final class DecryptionQueue: @unchecked Sendable {
    /// A TLS record to open in place. The session and the decryptor are held unretained, as a
    /// `PacketJob`'s are: the batch keeps them alive (`Batch.held`). When the job held them,
    /// opening it on the decryption thread retained and released both, writes to their first
    /// cache lines while the pipeline's thread counted references on the same session for every
    /// segment: the lines moved between the cores, and the retains and releases under
    /// `ConnectionTable.receive` and `TLSSession.received` were 9.8 % of the pipeline thread's
    /// samples in a TLS run (1.9 % on one core).
    struct Job {
        /// While a record waits here, so does the end of its connection (`later`), whose step
        /// holds the connection (which the session holds unowned) until it runs.
        let session: Unmanaged<TLSSession>
        let direction: Direction
        let decryptor: Unmanaged<DirectionDecryptor>
        var record: TLSRecordReader.Record
        var opened: OpenedRecord = .other
        /// Where the plaintext starts in the record's body (opened in place).
        var start = 0
    }

    /// A QUIC 1-RTT packet whose header protection is removed and whose keys are chosen (on the
    /// pipeline's thread): its bytes lie in its batch's arena, its AEAD is opened there, in place,
    /// and its frames read in its turn.
    ///
    /// The session and the keys are held unretained: the batch keeps each object its packets use
    /// alive (`Batch.held`, once for a run of packets that use the same), so neither thread
    /// counts references on them per packet. A count per packet was a write to the keys object's
    /// first cache line on the pipeline's thread while the decryption thread read the AEAD
    /// context beside it: the line moved between the cores twice a packet.
    struct PacketJob {
        let session: Unmanaged<QUICConnectionSession>
        let direction: Direction
        let keys: Unmanaged<QUICPacketKeys>
        let packetNumber: UInt64
        /// Where the packet starts in the arena; its unprotected header's length; its length.
        let offset: Int
        let headerLength: Int
        let length: Int
        let at: Timestamp
        /// The plaintext's length once opened; nil: it did not authenticate.
        var plaintextLength: Int? = nil
    }

    /// A batch: its records, each opened where its body lies (the plaintext overwrites the
    /// ciphertext: no second buffer to keep warm). Filled on the pipeline's thread, opened on
    /// the decryption thread, read again on the pipeline's thread once `openedCount` says so:
    /// one thread at a time (the hand-overs go through the queue's monitor).
    final class Batch {
        private(set) var jobs: [Job] = []
        var packets: [PacketJob] = []
        var bytes = 0
        /// Delivered up to here (pipeline's thread).
        var delivered = 0
        /// Opened: its results may be delivered (pipeline's thread).
        var collected = false
        /// The QUIC packets' bytes, one after another (`PacketJob.offset`): one buffer per batch,
        /// kept with the batch when it is reused, instead of an array per packet. Allocated with
        /// the first packet; a batch is handed over before it passes `batchBytes`, and a datagram
        /// adds at most 64 KiB, so it grows only for a caller that skips `cycle`.
        private(set) var arena = UnsafeMutableRawBufferPointer(start: nil, count: 0)
        private(set) var arenaUsed = 0
        /// The sessions, decryptors and keys this batch's records and packets use (each once for
        /// a run of them that use it): what keeps them alive until the batch is recycled.
        private var held: [AnyObject] = []
        private var lastSession: UnsafeMutableRawPointer? = nil
        private var lastKeys: UnsafeMutableRawPointer? = nil

        deinit { arena.deallocate() }

        /// Room for `count` bytes at the arena's end (pipeline's thread, while filling).
        func reserve(_ count: Int) -> UnsafeMutableRawBufferPointer {
            if arenaUsed + count > arena.count {
                let grown = UnsafeMutableRawBufferPointer.allocate(byteCount: max(DecryptionQueue.batchBytes + (64 << 10),
                                                                                     2 * (arenaUsed + count)), alignment: 16)
                if arenaUsed > 0 { grown.copyMemory(from: UnsafeRawBufferPointer(rebasing: arena[0..<arenaUsed])) }
                arena.deallocate()
                arena = grown
            }
            return UnsafeMutableRawBufferPointer(rebasing: arena[arenaUsed..<(arenaUsed + count)])
        }

        /// Keeps `object` (which the caller holds) alive with the batch, unless it is the one kept
        /// last in `last`'s role: a reference is made, and counted, only when the batch keeps it.
        private func hold<T: AnyObject>(_ object: Unmanaged<T>, _ last: inout UnsafeMutableRawPointer?) {
            if last != object.toOpaque() { held.append(object.takeUnretainedValue()); last = object.toOpaque() }
        }

        func append(_ job: PacketJob) {
            hold(job.session, &lastSession)
            hold(job.keys, &lastKeys)
            packets.append(job)
            arenaUsed = job.offset + job.length
        }

        func append(_ job: Job) {
            hold(job.session, &lastSession)
            hold(job.decryptor, &lastKeys)
            jobs.append(job)
        }

        func openAll() {
            jobs.withUnsafeMutableBufferPointer { all in
                for i in all.indices {
                    let decryptor = all[i].decryptor
                    (all[i].opened, all[i].start) = decryptor._withUnsafeGuaranteedRef { $0.openInPlace(&all[i].record) }
                }
            }
            let arena = self.arena
            packets.withUnsafeMutableBufferPointer { all in
                for i in all.indices {
                    let (o, h, n) = (all[i].offset, all[i].headerLength, all[i].length)
                    let pn = all[i].packetNumber
                    all[i].plaintextLength = all[i].keys._withUnsafeGuaranteedRef {
                        $0.open(packetNumber: pn, header: UnsafeRawBufferPointer(rebasing: arena[o..<(o + h)]),
                                sealed: UnsafeRawBufferPointer(rebasing: arena[(o + h)..<(o + n)]),
                                into: UnsafeMutableRawBufferPointer(rebasing: arena[(o + h)..<(o + n)]))
                    }
                }
            }
        }

        /// Hands the `i`th QUIC packet's result to its connection.
        func deliverPacket(_ i: Int) {
            // Copied out: the job is trivial (its session and keys unretained), so the copy counts
            // nothing, where reading it in place held the array's buffer across the session's
            // call, a retain and a release a packet.
            let job = packets[i]
            let arena = self.arena
            let (o, n) = (job.offset, job.length)
            let start = o + job.headerLength
            job.session._withUnsafeGuaranteedRef {
                $0.opened(job.plaintextLength.map { UnsafeRawBufferPointer(rebasing: arena[start..<(start + $0)]) },
                          packet: UnsafeRawBufferPointer(rebasing: arena[o..<(o + n)]), at: job.at, from: job.direction)
            }
            delivered += 1
        }

        var count: Int { jobs.count + packets.count }

        /// Hands the `i`th record's result to its session.
        func deliver(_ i: Int) {
            let start = jobs[i].start
            let session = jobs[i].session
            (jobs[i].record.body ?? []).withUnsafeBytes { body in
                session._withUnsafeGuaranteedRef {
                    $0.opened(jobs[i].opened, plaintext: UnsafeRawBufferPointer(rebasing: body[start...]),
                              at: jobs[i].record.lastByte, from: jobs[i].direction)
                }
            }
            delivered += 1
        }

        func reset() {
            jobs.removeAll(keepingCapacity: true)
            packets.removeAll(keepingCapacity: true)
            held.removeAll(keepingCapacity: true)
            lastSession = nil
            lastKeys = nil
            arenaUsed = 0
            bytes = 0
            delivered = 0
            collected = false
        }
    }

    /// A step names the batch of its record or packet without holding it (`Unmanaged`): each
    /// step holding its batch cost four reference counts a packet (the append, the copy read
    /// by `runSteps` and its release, the compaction), 20.8 M instructions on the pipeline's
    /// thread for the QUIC twin's h3.pcap. Safe because a batch with steps still to
    /// run is always held elsewhere: by `filling` while its steps are asked for, then by
    /// `inFlight`, then by `collectOldest`'s local while `runSteps` delivers it, and once its
    /// last step ran by `spares` (`recycle`), where it is reused only for new steps.
    private enum Step {
        case call(() -> Void)
        case record(Unmanaged<Batch>, Int)
        case packet(Unmanaged<Batch>, Int)
    }

    /// Record bytes per batch: large enough that handing over costs nothing next to the AEAD,
    /// small enough that the thread starts early and memory stays flat. 256 KiB: the records in
    /// flight are the bulk of a decrypting run's memory, and each first touch of them a page
    /// fault. Against 1 MiB (peak RSS, HAR with the key logs): TLS twin 36.8 -> 28.9 MiB (6,522
    /// -> 4,662 page faults), HTTP/2 over TLS 40.9 -> 31.0, HTTP/3 42.7 -> 37.6; the times were
    /// the same within this machine's noise (11-21 alternations, medians within ±7 % either way).
    static let batchBytes = 256 << 10
    /// Batches on the thread at most: the pipeline waits for the oldest only beyond this, so a
    /// run of records that parse faster than they decrypt (large bodies) does not stall it.
    static let maxInFlight = 4
    /// Steps held behind one batch at most: a trickle of records among much other traffic hands
    /// its batch over before the steps held (finished connections among them) grow.
    static let maxHeldSteps = 8192

    /// Record bytes submitted before the thread starts.
    let startAfter: Int
    /// Records handed to the thread so far.
    private(set) var recordsQueued = 0
    private var submittedBytes = 0
    private var threaded = false
    private var filling = Batch()
    /// Batches handed to the thread, oldest first, and batches to reuse.
    private var inFlight: [Batch] = []
    private var spares: [Batch] = []
    /// Steps in the order asked for, from `head` on.
    private var steps: [Step] = []
    private var head = 0
    /// Steps asked for while the current batch fills.
    private var stepsInBatch = 0
    /// Set while steps run: a step's own consequences run at once, in their place.
    private var running = false
    /// Guarded by `monitor`: the batches handed to the thread and not yet taken, and how many of
    /// all the batches handed were opened.
    private var queue: [Batch] = []
    private var handedCount = 0
    private var openedCount = 0
    private var closing = false
    private let monitor = Monitor()
    private var thread: pthread_t? = nil
    private var threadFailed = false

    init(startAfter: Int) {
        self.startAfter = startAfter
    }

    /// Whether a step asked for now must wait behind others (`later` holds it).
    var isHolding: Bool { !running && head < steps.count }

    /// Runs `step` now, or, while records before it are still being opened, in its turn.
    func later(_ step: @escaping () -> Void) {
        guard isHolding else { return step() }
        steps.append(.call(step))
        stepsInBatch += 1
    }

    /// A record of `direction` to open with `decryptor`; `session.opened` gets the result in
    /// its turn. Answers whether a batch took the record (its body stays there until delivered);
    /// false before the thread runs: the session opens it at once, as without a queue.
    func submit(_ record: TLSRecordReader.Record, from direction: Direction, of session: TLSSession, with decryptor: DirectionDecryptor) -> Bool {
        let size = record.body?.count ?? 0
        submittedBytes &+= size
        if !threaded {
            guard submittedBytes >= startAfter, startThread() else { return false }
            threaded = true
        }
        recordsQueued += 1
        let batch = filling
        batch.append(Job(session: Unmanaged.passUnretained(session), direction: direction,
                         decryptor: Unmanaged.passUnretained(decryptor), record: record))
        steps.append(.record(Unmanaged.passUnretained(batch), batch.jobs.count - 1))
        // A record without its body (lost) still counts a little: a batch never grows unbounded.
        batch.bytes += max(size, 64)
        return true
    }

    /// A QUIC packet to open; its connection's `opened` gets the result in its turn. Answers
    /// whether a batch took it (false before the thread runs: the connection opens it at once).
    /// Before the thread runs, asks nothing of the caller but its size (`willTake`).
    func willTake(packetBytes: Int) -> Bool {
        submittedBytes &+= packetBytes
        if !threaded {
            guard submittedBytes >= startAfter, startThread() else { return false }
            threaded = true
        }
        return true
    }

    /// The packet of a `willTake` that answered true: its unprotected header (`header`), then the
    /// rest of the protected packet (`sealed`), copied into the filling batch's arena.
    /// `keys`: unretained; the caller holds them until this returns, and the batch from then on.
    func submit(header: UnsafeRawBufferPointer, sealed: UnsafeRawBufferPointer, packetNumber: UInt64, keys: Unmanaged<QUICPacketKeys>,
                of session: QUICConnectionSession, from direction: Direction, at ts: Timestamp) {
        recordsQueued += 1
        // The batch named unretained: `filling` holds it, and only `handOverFilling` (in `cycle`,
        // never from here) replaces it. Read as a strong reference, a retain and a release.
        let batch = Unmanaged.passUnretained(filling)
        batch._withUnsafeGuaranteedRef { batch in
            let length = header.count + sealed.count
            let room = batch.reserve(length)
            room.copyMemory(from: header)
            UnsafeMutableRawBufferPointer(rebasing: room[header.count...]).copyMemory(from: sealed)
            batch.append(PacketJob(session: Unmanaged.passUnretained(session), direction: direction, keys: keys, packetNumber: packetNumber,
                                   offset: batch.arenaUsed, headerLength: header.count, length: length, at: ts))
            steps.append(.packet(Unmanaged.passUnretained(batch), batch.packets.count - 1))
            batch.bytes += max(length, 64)
        }
    }

    /// After each packet: a full batch (or one with many steps held behind it) goes to the
    /// thread; beyond `maxInFlight` batches there, the oldest is waited for and its steps run.
    @inline(__always) func cycle() {
        guard threaded, filling.bytes >= Self.batchBytes || stepsInBatch >= Self.maxHeldSteps else { return }
        handOverFilling()
        while inFlight.count > Self.maxInFlight { collectOldest() }
    }

    private func handOverFilling() {
        let batch = filling
        filling = spares.popLast() ?? Batch()
        stepsInBatch = 0
        inFlight.append(batch)
        monitor.lock()
        queue.append(batch)
        handedCount += 1
        monitor.broadcast()
        monitor.unlock()
    }

    /// Every record submitted is opened and every step held has run before this returns.
    func drain() {
        guard !running else { return }
        if filling.count > 0 {
            handOverFilling()
        }
        while !inFlight.isEmpty { collectOldest() }
        runSteps()
    }

    /// Waits until the thread opened the oldest batch handed to it, then runs the steps held up
    /// to the first record of a batch still on the thread.
    private func collectOldest() {
        let batch = inFlight.removeFirst()
        let wanted = handedCount - inFlight.count
        monitor.lock()
        while openedCount < wanted { monitor.wait() }
        monitor.unlock()
        batch.collected = true
        runSteps()
    }

    private func runSteps() {
        running = true
        defer { running = false }
        while head < steps.count {
            switch steps[head] {
            case .call(let step):
                head += 1
                step()
            case .record(let batch, let i):
                guard deliver(batch, { $0.deliver(i) }) else { return compact() }
            case .packet(let batch, let i):
                guard deliver(batch, { $0.deliverPacket(i) }) else { return compact() }
            }
        }
        compact()
    }

    /// The step at `head`, a record or a packet of `batch`, delivered by `body` once the thread
    /// opened its batch (false: not yet, the step stays); a batch whose last step this was is
    /// recycled. The batch is used without a reference count: `Step` says why it is held.
    @inline(__always)
    private func deliver(_ batch: Unmanaged<Batch>, _ body: (Batch) -> Void) -> Bool {
        guard batch._withUnsafeGuaranteedRef({ $0.collected }) else { return false }
        head += 1
        if batch._withUnsafeGuaranteedRef({ body($0); return $0.delivered == $0.count }) { recycle(batch.takeUnretainedValue()) }
        return true
    }

    /// Record bodies to read the next records into (`TLSRecordReader.bodyTaken`): the bodies
    /// of records delivered, so that a record's bytes go to memory used a moment ago, not to a
    /// new allocation each time.
    private var spareBodies: [[UInt8]] = []
    /// A batch of `batchBytes` holds about 16 full records; four in flight and the one filling,
    /// 80: the spares cover what comes back without keeping more than the batches held.
    private static let maxSpareBodies = 64

    /// A buffer for the next record body of a reader whose last one was submitted.
    func spareBody() -> [UInt8] { spareBodies.popLast() ?? [] }

    private func recycle(_ batch: Batch) {
        for i in batch.jobs.indices where spareBodies.count < Self.maxSpareBodies {
            if let body = batch.jobs[i].record.body { spareBodies.append(body) }
        }
        batch.reset()
        spares.append(batch)
    }

    private func compact() {
        if head == steps.count {
            steps.removeAll(keepingCapacity: true)
            head = 0
        } else if head > 4096 && head * 2 > steps.count {
            steps.removeFirst(head)
            head = 0
        }
    }

    private func startThread() -> Bool {
        if thread != nil { return true }
        guard !threadFailed else { return false }
        guard let t = IcySniffCore.startThread(named: "icy-decrypt", { self.work() }) else {
            threadFailed = true
            return false
        }
        thread = t
        return true
    }

    /// Stops the thread (after `drain`).
    func stop() {
        guard let t = thread else { return }
        monitor.withLock { closing = true; monitor.broadcast() }
        pthread_join(t, nil)
        thread = nil
        closing = false
        threaded = false
    }

    private func work() {
        monitor.lock()
        while true {
            while queue.isEmpty {
                if closing { monitor.unlock(); return }
                monitor.wait()
            }
            let batch = queue.removeFirst()
            monitor.unlock()
            batch.openAll()
            monitor.lock()
            openedCount += 1
            monitor.broadcast()
        }
    }
}

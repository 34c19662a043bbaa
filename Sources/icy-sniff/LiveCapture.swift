import IcySniffCore
#if canImport(Glibc)
import Glibc
#endif

/// Set by SIGINT/SIGTERM; the pipeline checks it between packets and stops cleanly, so every
/// pending transaction is still flushed and written.
nonisolated(unsafe) var stopRequested: sig_atomic_t = 0
/// Set by SIGHUP in a live capture writing files: the outputs are completed and new ones begun.
nonisolated(unsafe) var reopenRequested: sig_atomic_t = 0

enum Signals {
    /// SIGINT and SIGTERM ask for a clean stop; a second one ends the process at once (the
    /// handler gives the signal its default action back). No SA_RESTART: a read or open that
    /// waits (an idle pipe or FIFO on `-r`) returns EINTR, so the stop is noticed at once.
    /// SIGPIPE is ignored: a reader that went away (`| head`) is an EPIPE on write, handled by
    /// `OutputFile` (a quiet end, exit 0).
    static func install() {
        TemporaryFiles.prepare()
        OutputFile.staleTemporaryFile = { path in
            Diagnostics.warning("'\(path)' is the temporary file of an earlier run that was killed while writing this output; remove it (it is not removed, another run may be writing it)")
        }
        for number in [SIGINT, SIGTERM] { handle(number, stopHandler) }
        signal(SIGPIPE, SIG_IGN)
        OutputFile.readerWentAway = { exit(0) }
    }
    static var stop: Bool { stopRequested != 0 }

    /// Asks for a clean stop; a second SIGINT or SIGTERM ends the process at once.
    private static let stopHandler: @convention(c) (Int32) -> Void = { number in
        stopRequested = 1
        handle(number, forceHandler)
    }

    /// The second signal: no output is completed. The temporary files of the outputs being
    /// written are removed (an earlier complete output under the same name stays as it was), a
    /// line says so, and the process exits 130. Only async-signal-safe calls.
    private static let forceHandler: @convention(c) (Int32) -> Void = { _ in
        let removed = TemporaryFiles.removeAll()
        let message: StaticString = removed > 0
            ? "icy-sniff: stopped at once by a second signal: the outputs being written were not completed and are removed\n"
            : "icy-sniff: stopped at once by a second signal\n"
        _ = Glibc.write(2, message.utf8Start, message.utf8CodeUnitCount)
        _exit(130)
    }

    /// Installs `handler` for `number` without SA_RESTART, and unblocks the signal (a parent may
    /// have left it blocked: the mask is inherited across exec).
    private static func handle(_ number: Int32, _ handler: @convention(c) (Int32) -> Void) {
        var action = sigaction()
        action.__sigaction_handler.sa_handler = handler
        sigemptyset(&action.sa_mask)
        action.sa_flags = 0
        sigaction(number, &action, nil)
        var set = sigset_t()
        sigemptyset(&set)
        sigaddset(&set, number)
        sigprocmask(SIG_UNBLOCK, &set, nil)
    }

    /// Carries a stop to threads that may wait in a read or an open (a batch's jobs, each on its
    /// capture, one of which may be an idle FIFO or pipe): the process's SIGINT interrupts only
    /// the one thread the kernel gives it to, so the others are sent SIGUSR2, whose handler does
    /// nothing but end the waiting call with EINTR (no SA_RESTART), after which the reader sees
    /// the stop. Only threads registered as `waiting` are signalled, under the lock that
    /// unregisters them, so no thread is signalled after it left.
    final class Waiters: @unchecked Sendable {
        private let lock = Lock()
        private var threads: [pthread_t] = []

        init() { handle(SIGUSR2, { _ in }) }

        /// Runs `body` with the calling thread registered, and SIGUSR2 unblocked in it
        /// (libdispatch's worker threads block signals; the mask is the thread's own).
        func waiting<T>(_ body: () -> T) -> T {
            let me = pthread_self()
            var wake = sigset_t(), before = sigset_t()
            sigemptyset(&wake)
            sigaddset(&wake, SIGUSR2)
            pthread_sigmask(SIG_UNBLOCK, &wake, &before)
            lock.withLock { threads.append(me) }
            defer {
                lock.withLock { if let i = threads.firstIndex(where: { pthread_equal($0, me) != 0 }) { threads.remove(at: i) } }
                pthread_sigmask(SIG_SETMASK, &before, nil)
            }
            return body()
        }

        /// Interrupts every registered thread's waiting call; called again while they run (a
        /// thread signalled just before it began to wait waits on: the next call reaches it).
        func interrupt() {
            lock.withLock { for thread in threads { pthread_kill(thread, SIGUSR2) } }
        }
    }

    /// A live capture: SIGHUP completes the output files and begins new ones (logrotate's
    /// convention: it moves the file away, then sends SIGHUP) when there are files (`reopens`);
    /// writing to a terminal or a pipe, it is the hangup it is and stops the capture cleanly.
    static func installHangup(reopens: Bool) {
        handle(SIGHUP, reopens ? { _ in reopenRequested = 1 } : stopHandler)
    }

    /// Whether SIGHUP came since the last call.
    static func takeReopen() -> Bool {
        guard reopenRequested != 0 else { return false }
        reopenRequested = 0
        return true
    }
}

/// What a run does between packets, by the wall clock: the `--stats` line; and in a live capture,
/// once a second, `-G` periods that ended (quiet traffic still closes its file on time), SIGHUP,
/// and pushing `-w`'s buffer to its file.
final class Upkeep {
    var heartbeat: Heartbeat?
    /// Live only: the rotated transaction output (the export runs on this thread then).
    var rotating: RotatingOutput? = nil
    var packets: PacketWriter? = nil
    private var lastSecond: Int64 = 0

    init(statsSeconds: Double?) {
        heartbeat = statsSeconds.map(Heartbeat.init(interval:))
    }

    /// `now`: the monotonic clock (`Heartbeat.monotonicSeconds`), read once by the caller.
    func tick(pipeline: Pipeline, source: PcapSource?, live: Bool, now: Double) {
        heartbeat?.beatIfDue(pipeline: pipeline, source: source, now: now)
        guard live else { return }
        let second = Int64(now)
        guard second != lastSecond else { return }
        lastSecond = second
        // Once a second: the realtime clock, which -G periods are made of.
        let wall = Timestamp.now()
        if Signals.takeReopen() {
            rotating?.rotator.reopen()
            packets?.reopen()
        }
        rotating?.rotator.advance(to: wall)
        packets?.advance(to: wall)
        packets?.flush()
    }
}

/// A live capture on one interface until a signal, a packet count or a duration ends it.
struct LiveCapture {
    var interface: String
    var input: InputOptions
    let source: PcapSource
    /// `-q`: the kernel's counters are said only when it dropped packets (a loss is never
    /// silent).
    var quiet = false

    /// Opens the interface (as root), then drops privileges (`-Z`); output files are opened after.
    static func open(interface: String, input: InputOptions) -> Result<LiveCapture, Frontend.Failure> {
        let source: PcapSource
        do {
            source = try PcapSource.openLive(interface: interface, promiscuous: input.promiscuous, filter: input.filter,
                                             bufferKiB: input.bufferKiB ?? PcapSource.defaultBufferKiB)
        } catch {
            return .failure(.init(message: error.message, code: Frontend.Exit.badInput))
        }
        if !source.linkType.isSupported {
            return .failure(.init(message: CaptureError.unsupportedLinkType(path: interface, dlt: source.dlt, name: source.linkTypeName).message,
                                  code: Frontend.Exit.badInput))
        }
        if let user = input.user {
            if let problem = Privileges.drop(to: user) { return .failure(.init(message: problem, code: Frontend.Exit.badInput)) }
        }
        return .success(LiveCapture(interface: interface, input: input, source: source))
    }

    func run(pipeline: Pipeline, upkeep: Upkeep) -> Int32 {
        // Asked before every read: one clock read serves the upkeep and the duration.
        let end = input.duration.map { Heartbeat.monotonicSeconds() + $0 } ?? .infinity
        let outcome = pipeline.run(source, maxPackets: input.count) {
            if Signals.stop { return true }
            let now = Heartbeat.monotonicSeconds()
            upkeep.tick(pipeline: pipeline, source: source, live: true, now: now)
            return now >= end
        }
        if outcome == .interrupted && pipeline.stats.packets < input.count ?? .max {
            // The kernel hands packets over in blocks (at least every 10 ms): what it holds when
            // the stop came is still read, for up to 50 ms or until the ring is drained.
            let idle = source.idleReads
            let until = Heartbeat.monotonicSeconds() + 0.05
            usleep(20_000)
            _ = pipeline.run(source, maxPackets: input.count) {
                source.idleReads != idle || Heartbeat.monotonicSeconds() >= until
            }
        }
        if let stats = source.statistics(), !quiet || stats.dropped > 0 || stats.interfaceDropped > 0 {
            let peak = Heartbeat.format(Double(Heartbeat.peakResidentBytes()) / 1_048_576)
            Diagnostics.info("icy-sniff: \(stats.received) packets received by filter, \(stats.dropped) dropped by kernel, \(stats.interfaceDropped) dropped by interface; peak \(peak) MiB resident")
        }
        if case .damaged(let message) = outcome {
            Diagnostics.error("capture on '\(interface)' failed: \(message)")
            return Frontend.Exit.damaged
        }
        return Frontend.Exit.ok
    }
}

/// `-Z USER`: give up root after the interface is open, as tcpdump does.
enum Privileges {
    static func drop(to user: String) -> String? {
        guard let pw = getpwnam(user) else { return "no such user '\(user)' for -Z" }
        let uid = pw.pointee.pw_uid, gid = pw.pointee.pw_gid
        if initgroups(user, gid) != 0 || setgid(gid) != 0 || setuid(uid) != 0 {
            return "cannot switch to user '\(user)': \(String(cString: strerror(errno)))"
        }
        if setuid(0) == 0 { return "dropping privileges to '\(user)' did not stick" }
        return nil
    }
}

import IcySniffCore
#if canImport(Glibc)
import Glibc
#endif

/// Set by SIGINT/SIGTERM; the pipeline checks it between packets and stops cleanly, so every
/// pending transaction is still flushed and written.
nonisolated(unsafe) var stopRequested: sig_atomic_t = 0

enum Signals {
    /// SIGINT and SIGTERM ask for a clean stop; a second one ends the process at once (the
    /// handler gives the signal its default action back). No SA_RESTART: a read or open that
    /// waits (an idle pipe or FIFO on `-r`) returns EINTR, so the stop is noticed at once.
    /// SIGPIPE is ignored: a reader that went away (`| head`) is an EPIPE on write, handled by
    /// `OutputFile` (a quiet end, exit 0).
    static func install() {
        for number in [SIGINT, SIGTERM] {
            var action = sigaction()
            action.__sigaction_handler.sa_handler = { number in
                stopRequested = 1
                signal(number, SIG_DFL)
            }
            sigemptyset(&action.sa_mask)
            action.sa_flags = 0
            sigaction(number, &action, nil)
        }
        signal(SIGPIPE, SIG_IGN)
        OutputFile.readerWentAway = { exit(0) }
        // A parent may have left these blocked (the mask is inherited across exec).
        var set = sigset_t()
        sigemptyset(&set)
        sigaddset(&set, SIGINT)
        sigaddset(&set, SIGTERM)
        sigprocmask(SIG_UNBLOCK, &set, nil)
    }
    static var stop: Bool { stopRequested != 0 }
}

/// A live capture on one interface until a signal, a packet count or a duration ends it.
struct LiveCapture {
    var interface: String
    var input: InputOptions
    let source: PcapSource

    /// Opens the interface (as root), then drops privileges (`-Z`); output files are opened after.
    static func open(interface: String, input: InputOptions) -> Result<LiveCapture, Frontend.Failure> {
        let source: PcapSource
        do {
            source = try PcapSource.openLive(interface: interface, promiscuous: input.promiscuous, filter: input.filter)
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
        if let path = input.write {
            do { try source.startSaving(to: path) } catch {
                return .failure(.init(message: error.message, code: Frontend.Exit.outputFailed))
            }
        }
        return .success(LiveCapture(interface: interface, input: input, source: source))
    }

    func run(pipeline: Pipeline) -> Int32 {
        var start = timespec()
        clock_gettime(CLOCK_MONOTONIC, &start)
        let duration = input.duration
        var lastFlush = start.tv_sec
        let outcome = pipeline.run(source, maxPackets: input.count) {
            if Signals.stop { return true }
            var now = timespec()
            clock_gettime(CLOCK_MONOTONIC, &now)
            if now.tv_sec != lastFlush { lastFlush = now.tv_sec; source.flushSaved() }
            if let duration {
                let elapsed = Double(now.tv_sec - start.tv_sec) + Double(now.tv_nsec - start.tv_nsec) / 1e9
                if elapsed >= duration { return true }
            }
            return false
        }
        source.flushSaved()
        if let stats = source.statistics() {
            Diagnostics.info("icy-sniff: \(stats.received) packets received by filter, \(stats.dropped) dropped by kernel, \(stats.interfaceDropped) dropped by interface")
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

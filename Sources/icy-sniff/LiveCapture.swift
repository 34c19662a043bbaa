import IcySniffCore
#if canImport(Glibc)
import Glibc
#endif

/// Set by SIGINT/SIGTERM; the pipeline checks it between packets and stops cleanly, so every
/// pending transaction is still flushed and written.
nonisolated(unsafe) var stopRequested: sig_atomic_t = 0

enum Signals {
    static func install() {
        signal(SIGINT) { _ in stopRequested = 1 }
        signal(SIGTERM) { _ in stopRequested = 1 }
    }
    static var stop: Bool { stopRequested != 0 }
}

/// A live capture on one interface until a signal, a packet count or a duration ends it.
struct LiveCapture {
    var interface: String
    var input: InputOptions

    func run(pipeline: Pipeline) -> Int32 {
        let source: PcapSource
        do {
            source = try PcapSource.openLive(interface: interface, promiscuous: input.promiscuous, filter: input.filter)
        } catch {
            Diagnostics.error(error.message)
            return Frontend.Exit.badInput
        }
        if !source.linkType.isSupported {
            Diagnostics.error(CaptureError.unsupportedLinkType(path: interface, dlt: source.dlt, name: source.linkTypeName).message)
            return Frontend.Exit.badInput
        }
        var start = timespec()
        clock_gettime(CLOCK_MONOTONIC, &start)
        let duration = input.duration
        let outcome = pipeline.run(source, maxPackets: input.count) {
            if Signals.stop { return true }
            if let duration {
                var now = timespec()
                clock_gettime(CLOCK_MONOTONIC, &now)
                let elapsed = Double(now.tv_sec - start.tv_sec) + Double(now.tv_nsec - start.tv_nsec) / 1e9
                if elapsed >= duration { return true }
            }
            return false
        }
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

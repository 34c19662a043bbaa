import IcySniffCore
#if canImport(Glibc)
import Glibc
#endif

/// `--stats SECONDS`: a line of figures on standard error at each interval, for a capture that
/// runs for days — what Zeek's stats.log and Suricata's stats.log tell an operator, on one line:
///
///     icy-sniff: stats 2026-11-24T10:00:00Z: 120345 packets (+1203), dropped 0 by kernel (+0),
///     0 by interface (+0), 14 connections open, 512 transactions (3.2/s), 45.1 MiB resident
///
/// Drops are libpcap's counters (live captures only); "+n" is since the line before.
struct Heartbeat {
    let interval: Double
    private var lastTime: Double
    private var lastPackets: UInt64 = 0
    private var lastTransactions: UInt64 = 0
    private var lastDropped: UInt32 = 0
    private var lastInterfaceDropped: UInt32 = 0

    init(interval: Double) {
        self.interval = interval
        lastTime = Self.monotonicSeconds()
    }

    /// Prints a line when an interval has passed (`now`: `monotonicSeconds()`).
    mutating func beatIfDue(pipeline: Pipeline, source: PcapSource?, now: Double) {
        guard now - lastTime >= interval else { return }
        beat(pipeline: pipeline, source: source, now: now)
    }

    /// Prints a line now: at an interval, and once more when a live capture has ended and its
    /// last transactions are written, so that the last line holds the run's final figures.
    mutating func beat(pipeline: Pipeline, source: PcapSource?, now: Double) {
        let elapsed = now - lastTime
        lastTime = now
        let stats = pipeline.statsSoFar
        var line = "icy-sniff: stats \(Timestamp.now().iso8601(fractionDigits: 0)): "
        line += "\(stats.packets) packets (+\(stats.packets &- lastPackets))"
        if let counters = source?.statistics() {
            line += ", dropped \(counters.dropped) by kernel (+\(counters.dropped &- lastDropped)), "
            line += "\(counters.interfaceDropped) by interface (+\(counters.interfaceDropped &- lastInterfaceDropped))"
            lastDropped = counters.dropped
            lastInterfaceDropped = counters.interfaceDropped
        }
        let rate = Double(stats.transactions &- lastTransactions) / max(elapsed, 0.001)
        line += ", \(pipeline.openConnections) connections open, \(stats.transactions) transactions (\(Self.format(rate))/s)"
        for (noun, total, decrypted) in [("TLS", stats.tlsConnections, stats.tlsDecrypted), ("QUIC", stats.quicConnections, stats.quicDecrypted)]
        where total > 0 {
            line += ", \(total) \(noun) (\(total - decrypted) encrypted)"
        }
        line += ", \(Self.format(Double(Self.residentBytes()) / 1_048_576)) MiB resident"
        lastPackets = stats.packets
        lastTransactions = stats.transactions
        Diagnostics.info(line)
    }

    static func format(_ value: Double) -> String {
        let tenths = (value * 10).rounded() / 10
        return tenths == tenths.rounded() ? String(Int(tenths)) : String(tenths)
    }

    static func monotonicSeconds() -> Double {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return Double(now.tv_sec) + Double(now.tv_nsec) / 1e9
    }

    /// Resident memory now (/proc/self/statm: size and resident pages); 0 where it cannot be read.
    static func residentBytes() -> Int {
        guard let f = fopen("/proc/self/statm", "r") else { return 0 }
        defer { fclose(f) }
        var line = [CChar](repeating: 0, count: 128)
        guard fgets(&line, Int32(line.count), f) != nil else { return 0 }
        let fields = String(cBuffer: line).split(separator: " ")
        guard fields.count >= 2, let pages = Int(fields[1]) else { return 0 }
        return pages * sysconf(Int32(_SC_PAGESIZE))
    }

    /// The most resident memory the process had (getrusage).
    static func peakResidentBytes() -> Int {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        return usage.ru_maxrss * 1024
    }
}

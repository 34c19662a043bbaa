/// Errors a user or the environment causes when opening or reading a capture. Each has one line of
/// text for the user and an exit code (documented in `icy-sniff --help` and its manual page, `man icy-sniff`: EXIT CODES).
public enum CaptureError: Error, Equatable, Sendable {
    case cannotOpen(path: String, reason: String)
    case emptyFile(path: String)
    case notACapture(path: String, detail: String)
    case unsupportedLinkType(path: String, dlt: Int32, name: String)
    case badFilter(filter: String, reason: String)
    case noSuchInterface(name: String, reason: String)
    case permissionDenied(interface: String, reason: String)
    case liveCaptureFailed(interface: String, reason: String)

    /// One line, without the program name.
    public var message: String {
        switch self {
        case let .cannotOpen(path, reason): return "cannot open '\(path)': \(reason)"
        case let .emptyFile(path): return "'\(path)' is empty, not a capture"
        case let .notACapture(path, detail):
            let lower = path.lowercased()
            let output = [".har", ".ndjson", ".jsonl", ".json"].contains { lower.hasSuffix($0) }
            // A HAR or NDJSON file is read by the commands that take icy-sniff's outputs.
            return "'\(path)' is not a pcap or pcapng capture (\(detail))"
                + (output ? "; HAR and NDJSON files are read by 'icy-sniff diff A B' and by the web view (--serve, then Open HAR)" : "")
        case let .unsupportedLinkType(path, dlt, name):
            return "'\(path)': link type \(name) (\(dlt)) is not supported (supported: Ethernet, Linux cooked v1/v2, raw IP, BSD loopback, NFLOG, PPP, PPPoE, Cisco HDLC, 802.11 with radiotap/PPI/Prism/AVS)"
        case let .badFilter(filter, reason): return "invalid capture filter '\(filter)': \(reason)"
        case let .noSuchInterface(name, reason): return "no such interface '\(name)': \(reason)"
        case let .permissionDenied(name, reason):
            return "no permission to capture on '\(name)': \(reason) (run as root or grant CAP_NET_RAW)"
        case let .liveCaptureFailed(name, reason): return "cannot capture on '\(name)': \(reason)"
        }
    }
}

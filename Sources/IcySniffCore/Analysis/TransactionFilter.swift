/// What people filter on in an HTTP inspector: status class or code, method, host, content type,
/// duration and size. An empty filter lets everything through.
public struct TransactionFilter: Sendable {
    /// "2xx"-style classes (1...5) and exact codes; a missing response counts as status 0.
    public var statusClasses: Set<Int> = []
    public var statuses: Set<Int> = []
    public var methods: Set<String> = []
    /// Case-insensitive substrings of the host.
    public var hosts: [String] = []
    /// Case-insensitive substrings of the response Content-Type.
    public var contentTypes: [String] = []
    public var minDurationMilliseconds: Double? = nil
    public var minSize: UInt64? = nil

    public init() {}

    public var isEmpty: Bool {
        statusClasses.isEmpty && statuses.isEmpty && methods.isEmpty && hosts.isEmpty && contentTypes.isEmpty
            && minDurationMilliseconds == nil && minSize == nil
    }

    /// Parses "4xx,5xx,304".
    public mutating func addStatuses(_ text: String) throws(FilterError) {
        for part in text.split(separator: ",") {
            let p = part.trimmingASCIIWhitespace().lowercased()
            if p.count == 3, p.hasSuffix("xx"), let c = Int(p.prefix(1)), (1...5).contains(c) { statusClasses.insert(c); continue }
            guard let code = Int(p), (0...999).contains(code) else { throw FilterError(message: "invalid status '\(p)': use a code (404) or a class (4xx)") }
            statuses.insert(code)
        }
    }

    public func matches(_ t: Transaction) -> Bool {
        if !statusClasses.isEmpty || !statuses.isEmpty {
            let status = t.response?.status ?? 0
            if !(statuses.contains(status) || statusClasses.contains(status / 100)) { return false }
        }
        if !methods.isEmpty, !methods.contains((t.request?.method ?? "").uppercased()) { return false }
        if !hosts.isEmpty {
            let host = t.host.lowercased()
            if !hosts.contains(where: { host.contains($0.lowercased()) }) { return false }
        }
        if !contentTypes.isEmpty {
            let type = (t.response?.headers.first(.contentType) ?? "").lowercased()
            if !contentTypes.contains(where: { type.contains($0.lowercased()) }) { return false }
        }
        if let min = minDurationMilliseconds, t.timings.total < min { return false }
        if let min = minSize, (t.response?.decodedBytes ?? 0) < min { return false }
        return true
    }
}

public struct FilterError: Error, Sendable { public var message: String }

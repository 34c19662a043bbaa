struct FragmentKey: Hashable {
    var source: IPAddress
    var destination: IPAddress
    var identification: UInt32
    var proto: UInt8
}

/// Reassembles IPv4 and IPv6 fragments with bounded memory: at most `maxDatagrams` in progress,
/// 65,535 bytes each, dropped `timeout` after their first fragment (capture time).
final class FragmentReassembler {
    enum Result {
        case incomplete
        case complete(UnsafeRawBufferPointer)
        case failed(Weird)
    }

    private struct Pending {
        var buffer: [UInt8] = []
        var ranges: [(Int, Int)] = []
        var totalLength: Int? = nil
        var firstSeen: Timestamp
    }

    private var pending: [FragmentKey: Pending] = [:]
    /// Holds the last completed datagram so the view handed out stays valid until the next call.
    private let completed = UnsafeMutableRawBufferPointer.allocate(byteCount: 65_536, alignment: 8)

    deinit { completed.deallocate() }
    let maxDatagrams = 1024
    let timeout: Int64 = 30_000_000_000

    func add(key: FragmentKey, offset: Int, more: Bool, payload: UnsafeRawBufferPointer, timestamp: Timestamp) -> Result {
        expire(now: timestamp)
        let end = offset + payload.count
        guard end <= 65_535 else {
            pending[key] = nil
            return .failed(.fragmentTooLarge)
        }
        if pending[key] == nil {
            guard pending.count < maxDatagrams else { return .failed(.fragmentTableFull) }
            pending[key] = Pending(firstSeen: timestamp)
        }
        var overlapped = false
        let done: Bool = {
            var p = pending[key]!
            defer { pending[key] = p }
            if p.buffer.count < end { p.buffer.append(contentsOf: repeatElement(0, count: end - p.buffer.count)) }
            for r in p.ranges where r.0 < end && offset < r.1 { overlapped = true }
            // First copy wins: only bytes not yet present are written.
            if overlapped {
                for i in 0..<payload.count {
                    let pos = offset + i
                    if !p.ranges.contains(where: { $0.0 <= pos && pos < $0.1 }) { p.buffer[pos] = payload[i] }
                }
            } else {
                p.buffer.withUnsafeMutableBytes { dst in
                    if payload.count > 0 { dst.baseAddress!.advanced(by: offset).copyMemory(from: payload.baseAddress!, byteCount: payload.count) }
                }
            }
            p.ranges.append((offset, end))
            if !more { p.totalLength = end }
            guard let total = p.totalLength else { return false }
            p.ranges.sort { $0.0 < $1.0 }
            var covered = 0
            for r in p.ranges {
                if r.0 > covered { return false }
                covered = max(covered, r.1)
            }
            return covered >= total
        }()
        if done, let p = pending.removeValue(forKey: key) {
            let length = min(p.totalLength ?? p.buffer.count, p.buffer.count)
            p.buffer.withUnsafeBytes { src in
                if length > 0 { completed.baseAddress!.copyMemory(from: src.baseAddress!, byteCount: length) }
            }
            return .complete(UnsafeRawBufferPointer(rebasing: completed[0..<length]))
        }
        return overlapped ? .failed(.fragmentOverlap) : .incomplete
    }

    /// Datagrams dropped incomplete since the last `takeExpired`.
    private var expired = 0

    private func expire(now: Timestamp) {
        guard !pending.isEmpty else { return }
        for (key, p) in pending where now.nanoseconds - p.firstSeen.nanoseconds > timeout {
            pending[key] = nil
            expired += 1
            noteQUIC(key, p)
        }
    }

    func expireAll() {
        expired += pending.count
        for (key, p) in pending { noteQUIC(key, p) }
        pending.removeAll()
    }

    /// QUIC versions of dropped datagrams (at most `maxLostVersions` until taken).
    private var lostQUICVersions: [UInt32] = []
    private static let maxLostVersions = 64

    /// A UDP datagram dropped for a lost fragment whose first fragment came: if its payload
    /// begins with a QUIC long header (a client's Initial is padded to 1,200 bytes, and fragmented
    /// on paths with a smaller MTU), its version, which the first fragment shows as tshark does.
    private func noteQUIC(_ key: FragmentKey, _ p: Pending) {
        guard key.proto == 17, lostQUICVersions.count < Self.maxLostVersions,
              p.ranges.contains(where: { $0.0 == 0 && $0.1 >= 8 + 5 }) else { return }
        let version: UInt32? = p.buffer.withUnsafeBytes { QUICTracker.longHeaderVersion(UnsafeRawBufferPointer(rebasing: $0[8...])) }
        if let version { lostQUICVersions.append(version) }
    }

    func takeLostQUICVersions() -> [UInt32] {
        defer { lostQUICVersions = [] }
        return lostQUICVersions
    }

    func takeExpired() -> Int {
        defer { expired = 0 }
        return expired
    }
}

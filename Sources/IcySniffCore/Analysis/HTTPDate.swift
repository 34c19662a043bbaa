/// HTTP-date (RFC 9110 §5.6.7): IMF-fixdate, rfc850-date and asctime-date, matched
/// case-insensitively (RFC 9111 §4.2). Any other form, or a zone other than GMT, is invalid.
enum HTTPDate {
    /// Month names as three lower-case bytes packed into an integer.
    private static let months: [UInt32] = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]
        .map { key(Array($0.utf8)[...]) }
    private static let days: [UInt32] = ["mon", "tue", "wed", "thu", "fri", "sat", "sun"].map { key(Array($0.utf8)[...]) }
    private static let longDays: [[UInt8]] = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"].map { Array($0.utf8) }

    @inline(__always) private static func lower(_ c: UInt8) -> UInt8 { c &- 65 < 26 ? c | 0x20 : c }
    @inline(__always) private static func key(_ b: ArraySlice<UInt8>) -> UInt32 {
        guard b.count == 3 else { return 0 }
        let i = b.startIndex
        return UInt32(lower(b[i])) << 16 | UInt32(lower(b[i + 1])) << 8 | UInt32(lower(b[i + 2]))
    }

    /// Seconds since the epoch, or nil when `text` is not a valid HTTP-date. Works on bytes: it
    /// runs for every response (Date, Expires, Last-Modified).
    /// `now` resolves rfc850's two-digit year (RFC 9110 §5.6.7: more than 50 years ahead means the past century).
    static func parse(_ text: String, now: Timestamp? = nil) -> Int64? {
        let bytes = Array(text.utf8)
        var tokens: [ArraySlice<UInt8>] = []
        var i = 0
        while i < bytes.count {
            while i < bytes.count && (bytes[i] == 0x20 || bytes[i] == 0x09) { i += 1 }
            let start = i
            while i < bytes.count && bytes[i] != 0x20 && bytes[i] != 0x09 { i += 1 }
            if i > start { tokens.append(bytes[start..<i]) }
            if tokens.count > 6 { return nil }
        }
        func number(_ t: ArraySlice<UInt8>, digits: Int) -> Int64? {
            guard t.count == digits || (digits == -2 && (t.count == 1 || t.count == 2)) else { return nil }
            var v: Int64 = 0
            for c in t { guard c >= 0x30 && c <= 0x39 else { return nil }; v = v * 10 + Int64(c - 0x30) }
            return v
        }
        func isGMT(_ t: ArraySlice<UInt8>) -> Bool { key(t) == 0x67_6d74 }
        func clock(_ t: ArraySlice<UInt8>) -> Int64? {
            guard t.count == 8, t[t.startIndex + 2] == 0x3A, t[t.startIndex + 5] == 0x3A,
                  let h = number(t.prefix(2), digits: 2), let m = number(t.dropFirst(3).prefix(2), digits: 2),
                  let sec = number(t.suffix(2), digits: 2), h < 24, m < 60, sec <= 60 else { return nil }
            return h * 3600 + m * 60 + sec
        }
        // IMF-fixdate: "Sun, 06 Nov 1994 08:49:37 GMT"
        if tokens.count == 6, tokens[0].last == 0x2C, days.contains(key(tokens[0].dropLast())) {
            guard isGMT(tokens[5]), let day = number(tokens[1], digits: 2), let month = months.firstIndex(of: key(tokens[2])),
                  let year = number(tokens[3], digits: 4), let time = clock(tokens[4]) else { return nil }
            return make(year, Int64(month + 1), day, time)
        }
        // rfc850-date: "Sunday, 06-Nov-94 08:49:37 GMT"
        if tokens.count == 4, tokens[0].last == 0x2C, longDays.contains(where: { $0.elementsEqual(tokens[0].dropLast().map(lower)) }) {
            let dmy = tokens[1].split(separator: 0x2D, omittingEmptySubsequences: false)
            guard isGMT(tokens[3]), dmy.count == 3, let day = number(dmy[0], digits: 2), let month = months.firstIndex(of: key(dmy[1])),
                  let yy = number(dmy[2], digits: 2), let time = clock(tokens[2]) else { return nil }
            let currentYear = now.map { Timestamp.civil(fromDays: $0.nanoseconds / 1_000_000_000 / 86_400).0 } ?? 2000
            var year = (currentYear / 100) * 100 + yy
            if year > currentYear + 50 { year -= 100 }
            return make(year, Int64(month + 1), day, time)
        }
        // asctime-date: "Sun Nov  6 08:49:37 1994"
        if tokens.count == 5, days.contains(key(tokens[0])) {
            guard let month = months.firstIndex(of: key(tokens[1])), let day = number(tokens[2], digits: -2),
                  let time = clock(tokens[3]), let year = number(tokens[4], digits: 4) else { return nil }
            return make(year, Int64(month + 1), day, time)
        }
        return nil
    }

    private static func make(_ y: Int64, _ m: Int64, _ d: Int64, _ time: Int64) -> Int64? {
        guard d >= 1 && d <= 31 else { return nil }
        return Timestamp.days(fromCivil: y, m, d) * 86_400 + time
    }
}

extension String {
    /// Trims the given ASCII characters from both ends (bytes, not Characters: header values).
    func trimmingCharacters(in set: String) -> String {
        let strip = Array(set.utf8)
        var copy = self
        return copy.withUTF8 { b in
            var lo = 0, hi = b.count
            while lo < hi && strip.contains(b[lo]) { lo += 1 }
            while hi > lo && strip.contains(b[hi - 1]) { hi -= 1 }
            if lo == 0 && hi == b.count { return self }
            return String(decoding: UnsafeBufferPointer(rebasing: b[lo..<hi]), as: UTF8.self)
        }
    }
}

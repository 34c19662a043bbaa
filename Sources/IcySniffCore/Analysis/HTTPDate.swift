/// HTTP-date (RFC 9110 §5.6.7): IMF-fixdate, rfc850-date and asctime-date, matched
/// case-insensitively (RFC 9111 §4.2). Any other form, or a zone other than GMT, is invalid.
enum HTTPDate {
    private static let longDays: [[UInt8]] = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"].map { Array($0.utf8) }

    /// Three bytes, lower-cased, packed into an integer: how month and day names are compared.
    @inline(__always) private static func packed(_ a: UInt8, _ b: UInt8, _ c: UInt8) -> UInt32 {
        UInt32(lowerASCII(a)) << 16 | UInt32(lowerASCII(b)) << 8 | UInt32(lowerASCII(c))
    }

    /// "gmt", packed.
    private static let gmt: UInt32 = 0x67_6d74

    /// The month a packed name is (1-12), or nil. One switch for both parsers: it compiles to
    /// comparisons, where an array of names cost a lazy global's check and a search.
    @inline(__always) private static func month(_ name: UInt32) -> Int64? {
        switch name {
        case 0x6a_616e: return 1    // jan
        case 0x66_6562: return 2    // feb
        case 0x6d_6172: return 3    // mar
        case 0x61_7072: return 4    // apr
        case 0x6d_6179: return 5    // may
        case 0x6a_756e: return 6    // jun
        case 0x6a_756c: return 7    // jul
        case 0x61_7567: return 8    // aug
        case 0x73_6570: return 9    // sep
        case 0x6f_6374: return 10   // oct
        case 0x6e_6f76: return 11   // nov
        case 0x64_6563: return 12   // dec
        default: return nil
        }
    }

    /// Whether a packed name is a short day name (mon … sun).
    @inline(__always) private static func isDay(_ name: UInt32) -> Bool {
        switch name {
        case 0x6d_6f6e, 0x74_7565, 0x77_6564, 0x74_6875, 0x66_7269, 0x73_6174, 0x73_756e: return true
        default: return false
        }
    }

    /// Seconds since the epoch, or nil when `text` is not a valid HTTP-date. Works on bytes, without
    /// allocating: it runs for every response (Date, Expires, Last-Modified).
    /// `now` resolves rfc850's two-digit year (RFC 9110 §5.6.7: more than 50 years ahead means the past century).
    static func parse(_ text: String, now: Timestamp? = nil) -> Int64? {
        var t = text
        return t.withUTF8 { parse(bytes: $0, now: now) }
    }

    static func parse(bytes: UnsafeBufferPointer<UInt8>, now: Timestamp? = nil) -> Int64? {
        if let seconds = imfFixdate(bytes) { return seconds }
        return general(bytes, now: now)
    }

    /// Every form, whitespace as RFC 9110 allows; the reference for `imfFixdate`.
    static func general(_ bytes: UnsafeBufferPointer<UInt8>, now: Timestamp? = nil) -> Int64? {
        // Up to six whitespace-separated tokens, as ranges in a stack buffer.
        withUnsafeTemporaryAllocation(of: Range<Int>.self, capacity: 6) { parse(bytes, tokens: $0, now: now) }
    }

    /// The form nearly every server sends, at fixed offsets: "Sun, 06 Nov 1994 08:49:37 GMT"
    /// (29 bytes, one space between fields). Only a date this path fully accepts is answered
    /// here; anything else (another form, other spacing, a bad field) goes to the general
    /// parser, which decides — so both paths agree by construction. It skips the general
    /// parser's tokenizing; the names are read by the same `month` and `isDay`.
    @inline(__always)
    private static func imfFixdate(_ b: UnsafeBufferPointer<UInt8>) -> Int64? {
        guard b.count == 29, b[3] == 0x2C, b[4] == 0x20, b[7] == 0x20, b[11] == 0x20, b[16] == 0x20,
              b[19] == 0x3A, b[22] == 0x3A, b[25] == 0x20 else { return nil }
        @inline(__always) func digit(_ i: Int) -> Int64? {
            let c = b[i] &- 0x30
            return c < 10 ? Int64(c) : nil
        }
        @inline(__always) func two(_ i: Int) -> Int64? {
            guard let h = digit(i), let l = digit(i + 1) else { return nil }
            return h * 10 + l
        }
        @inline(__always) func word(_ i: Int) -> UInt32 { packed(b[i], b[i + 1], b[i + 2]) }
        guard let day = two(5), let century = two(12), let yy = two(14),
              let h = two(17), let m = two(20), let sec = two(23), h < 24, m < 60, sec <= 60,
              word(26) == gmt, isDay(word(0)), let mon = month(word(8)) else { return nil }
        return make(century * 100 + yy, mon, day, h * 3600 + m * 60 + sec)
    }

    private static func parse(_ bytes: UnsafeBufferPointer<UInt8>, tokens: UnsafeMutableBufferPointer<Range<Int>>,
                              now: Timestamp?) -> Int64? {
        var count = 0
        var i = 0
        let n = bytes.count
        while i < n {
            while i < n && (bytes[i] == 0x20 || bytes[i] == 0x09) { i += 1 }
            let start = i
            while i < n && bytes[i] != 0x20 && bytes[i] != 0x09 { i += 1 }
            if i > start {
                if count == 6 { return nil }
                tokens.initializeElement(at: count, to: start..<i)
                count += 1
            }
        }
        func token(_ k: Int) -> UnsafeBufferPointer<UInt8> { UnsafeBufferPointer(rebasing: bytes[tokens[k]]) }
        func number(_ t: UnsafeBufferPointer<UInt8>.SubSequence, digits: Int) -> Int64? {
            guard t.count == digits || (digits == -2 && (t.count == 1 || t.count == 2)) else { return nil }
            var v: Int64 = 0
            for c in t { guard c >= 0x30 && c <= 0x39 else { return nil }; v = v * 10 + Int64(c - 0x30) }
            return v
        }
        func key3(_ t: UnsafeBufferPointer<UInt8>.SubSequence) -> UInt32 {
            guard t.count == 3 else { return 0 }
            let i = t.startIndex
            return packed(t[i], t[i + 1], t[i + 2])
        }
        func isGMT(_ t: UnsafeBufferPointer<UInt8>) -> Bool { key3(t[...]) == gmt }
        func clock(_ t: UnsafeBufferPointer<UInt8>) -> Int64? {
            guard t.count == 8, t[2] == 0x3A, t[5] == 0x3A,
                  let h = number(t[0..<2], digits: 2), let m = number(t[3..<5], digits: 2),
                  let sec = number(t[6..<8], digits: 2), h < 24, m < 60, sec <= 60 else { return nil }
            return h * 3600 + m * 60 + sec
        }
        func month(_ t: UnsafeBufferPointer<UInt8>.SubSequence) -> Int64? {
            HTTPDate.month(key3(t))
        }
        if count == 6 {
            // IMF-fixdate: "Sun, 06 Nov 1994 08:49:37 GMT"
            let d = token(0)
            guard d.count == 4, d[3] == 0x2C, isDay(key3(d[0..<3])), isGMT(token(5)),
                  let day = number(token(1)[...], digits: 2), let mon = month(token(2)[...]),
                  let year = number(token(3)[...], digits: 4), let time = clock(token(4)) else { return nil }
            return make(year, mon, day, time)
        }
        if count == 4 {
            // rfc850-date: "Sunday, 06-Nov-94 08:49:37 GMT"
            let d = token(0)
            guard d.count >= 2, d[d.count - 1] == 0x2C,
                  longDays.contains(where: { $0.elementsEqual(d[0..<(d.count - 1)].lazy.map(lowerASCII)) }) else { return nil }
            let dmy = token(1)
            guard isGMT(token(3)), dmy.count == 9, dmy[2] == 0x2D, dmy[6] == 0x2D,
                  let day = number(dmy[0..<2], digits: 2), let mon = month(dmy[3..<6]),
                  let yy = number(dmy[7..<9], digits: 2), let time = clock(token(2)) else { return nil }
            let currentYear = now.map { Timestamp.civil(fromDays: $0.nanoseconds / 1_000_000_000 / 86_400).0 } ?? 2000
            var year = (currentYear / 100) * 100 + yy
            if year > currentYear + 50 { year -= 100 }
            return make(year, mon, day, time)
        }
        if count == 5 {
            // asctime-date: "Sun Nov  6 08:49:37 1994"
            guard isDay(key3(token(0)[...])), let mon = month(token(1)[...]),
                  let day = number(token(2)[...], digits: -2),
                  let time = clock(token(3)), let year = number(token(4)[...], digits: 4) else { return nil }
            return make(year, mon, day, time)
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

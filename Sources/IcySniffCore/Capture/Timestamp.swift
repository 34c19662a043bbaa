#if canImport(Glibc)
import Glibc
#endif

/// A capture time: nanoseconds since the Unix epoch (UTC).
///
/// Capture normalises microsecond pcap, nanosecond pcap and per-interface pcapng resolution into
/// this one type (libpcap is asked for nanosecond precision). Foundation `Date` is never used in the
/// per-packet path.
public struct Timestamp: Comparable, Hashable, Sendable, BitwiseCopyable {
    public var nanoseconds: Int64

    @inlinable public init(nanoseconds: Int64) { self.nanoseconds = nanoseconds }
    public init(seconds: Int64, nanoseconds: Int64) { self.nanoseconds = seconds &* 1_000_000_000 &+ nanoseconds }
    public init(secondsSinceEpoch: Double) { self.nanoseconds = Timestamp.clampedNanoseconds(secondsSinceEpoch * 1e9) }

    /// Doubles from the wire (dates, ages) can be anything: saturate instead of trapping.
    static func clampedNanoseconds(_ value: Double) -> Int64 {
        guard value.isFinite else { return value > 0 ? Int64.max / 2 : (value < 0 ? Int64.min / 2 : 0) }
        if value >= 4.6e18 { return Int64.max / 2 }
        if value <= -4.6e18 { return Int64.min / 2 }
        return Int64(value.rounded())
    }

    public static let zero = Timestamp(nanoseconds: 0)

    /// The realtime clock now (live captures: the clock the kernel stamps packets with).
    public static func now() -> Timestamp {
        var t = timespec()
        clock_gettime(CLOCK_REALTIME, &t)
        return Timestamp(seconds: Int64(t.tv_sec), nanoseconds: Int64(t.tv_nsec))
    }

    @inlinable public static func < (a: Timestamp, b: Timestamp) -> Bool { a.nanoseconds < b.nanoseconds }

    /// Seconds since the epoch, as a floating point number.
    public var secondsSinceEpoch: Double { Double(nanoseconds) / 1e9 }

    /// Milliseconds from `earlier` to `self` (negative when `earlier` is later).
    public func milliseconds(since earlier: Timestamp) -> Double {
        Double(nanoseconds &- earlier.nanoseconds) / 1e6
    }

    /// Seconds from `earlier` to `self`.
    public func seconds(since earlier: Timestamp) -> Double {
        Double(nanoseconds &- earlier.nanoseconds) / 1e9
    }

    public func adding(seconds: Double) -> Timestamp {
        let delta = Timestamp.clampedNanoseconds(seconds * 1e9)
        let (sum, overflow) = nanoseconds.addingReportingOverflow(delta)
        return Timestamp(nanoseconds: overflow ? (delta > 0 ? Int64.max / 2 : Int64.min / 2) : sum)
    }

    /// ISO 8601 in UTC with `fractionDigits` (0...9) digits after the second:
    /// `2009-03-17T11:04:27.123Z`.
    public func iso8601(fractionDigits: Int = 3) -> String {
        String(unsafeUninitializedCapacity: 32) { writeISO8601(to: $0.baseAddress!, fractionDigits: fractionDigits) }
    }

    /// Appends the ISO 8601 form to a byte buffer (used by the streaming writers).
    public func appendISO8601(to out: ByteBuffer, fractionDigits: Int = 3) {
        out.commit(writeISO8601(to: out.reserve(32), fractionDigits: fractionDigits))
    }

    /// The ISO 8601 form at `buf` (room for 32 bytes; it takes at most 30); answers its length.
    @inline(__always)
    func writeISO8601(to buf: UnsafeMutablePointer<UInt8>, fractionDigits: Int) -> Int {
        var secs = nanoseconds / 1_000_000_000
        var nanos = nanoseconds % 1_000_000_000
        if nanos < 0 { nanos += 1_000_000_000; secs -= 1 }
        var days = secs / 86_400
        var rem = secs % 86_400
        if rem < 0 { rem += 86_400; days -= 1 }
        let (y, m, d) = Timestamp.civil(fromDays: days)
        let digits = max(0, min(9, fractionDigits))
        do {
            var n = 0
            /// The lowest `width` decimal digits of |value|.
            func put(_ value: Int64, _ width: Int) {
                var v = value < 0 ? -value : value
                var i = n + width - 1
                while i >= n { buf[i] = UInt8(truncatingIfNeeded: 48 + v % 10); v /= 10; i -= 1 }
                n += width
            }
            func char(_ c: UInt8) { buf[n] = c; n += 1 }
            put(y, 4); char(0x2D)
            put(m, 2); char(0x2D)
            put(d, 2); char(0x54)
            put(rem / 3600, 2); char(0x3A)
            put((rem % 3600) / 60, 2); char(0x3A)
            put(rem % 60, 2)
            if digits > 0 {
                char(0x2E)
                var scaled = nanos
                for _ in 0..<(9 - digits) { scaled /= 10 }
                put(scaled, digits)
            }
            char(0x5A)
            return n
        }
    }

    /// Days since 1970-01-01 → (year, month, day), proleptic Gregorian (H. Hinnant's algorithm).
    static func civil(fromDays z0: Int64) -> (Int64, Int64, Int64) {
        let z = z0 + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365
        let y = yoe + era * 400
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let d = doy - (153 * mp + 2) / 5 + 1
        let m = mp < 10 ? mp + 3 : mp - 9
        return (m <= 2 ? y + 1 : y, m, d)
    }

    /// (year, month, day) → days since 1970-01-01.
    static func days(fromCivil y0: Int64, _ m: Int64, _ d: Int64) -> Int64 {
        let y = m <= 2 ? y0 - 1 : y0
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let mp = m > 2 ? m - 3 : m + 9
        let doy = (153 * mp + 2) / 5 + d - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146_097 + doe - 719_468
    }
}

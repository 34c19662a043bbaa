/// A streaming JSON writer that appends to its own reused byte buffer (in the style of Suricata's
/// JsonBuilder): no object graph, no Foundation. Commas are placed automatically. A reference
/// type (it is the buffer): writers are made once per output and reset per record.
public final class JSONWriter: ByteBuffer {
    /// Open containers: `depth`, and for each whether it has items yet (a comma goes before the
    /// next): a bit per level for the first 64, an array past that.
    private var depth = 0
    private var commaBits: UInt64 = 0
    private var deepCommas: [Bool] = []
    private var afterKey = false
    /// Indentation step; 0 writes one line.
    public var indent: Int
    /// Nesting depth of the surrounding document, for a fragment written on its own.
    public var baseDepth = 0

    public init(indent: Int = 0, capacity: Int = 4096) {
        self.indent = indent
        super.init(capacity: capacity)
    }

    public func reset() {
        removeAll()
        depth = 0
        commaBits = 0
        deepCommas.removeAll(keepingCapacity: true)
        afterKey = false
    }

    @inline(__always) private var topHasItems: Bool {
        depth <= 64 ? (commaBits >> UInt64(depth - 1)) & 1 == 1 : deepCommas[depth - 65]
    }

    @inline(__always) private func markTopHasItems() {
        if depth <= 64 { commaBits |= 1 << UInt64(depth - 1) } else { deepCommas[depth - 65] = true }
    }

    @inline(__always) private func push() {
        depth += 1
        if depth <= 64 { commaBits &= ~(1 << UInt64(depth - 1)) } else { deepCommas.append(false) }
    }

    /// Closes the innermost container; answers whether it had items.
    @inline(__always) private func pop() -> Bool {
        guard depth > 0 else { return false }
        let had = topHasItems
        if depth > 64 { deepCommas.removeLast() }
        depth -= 1
        return had
    }

    /// Spaces for indentation, copied instead of filled byte by byte.
    private static let spaces: StaticString = "                                                                                                                                "

    /// A line break and `pad` spaces at `base`; answers how many bytes that is.
    @inline(__always) private static func lineBreak(at base: UnsafeMutablePointer<UInt8>, pad: Int) -> Int {
        base[0] = 0x0A
        if pad <= spaces.utf8CodeUnitCount {
            (base + 1).update(from: spaces.utf8Start, count: pad)
        } else {
            (base + 1).initialize(repeating: 0x20, count: pad)
        }
        return 1 + pad
    }

    /// What goes between items of a container: a comma after an earlier item, then (indented
    /// output) a line break and the indentation. Written straight into the buffer after one
    /// capacity check — this runs for every key and every array item, the writer's hottest path.
    @inline(__always) private func separator() {
        let comma = topHasItems
        markTopHasItems()
        if indent == 0 {
            if comma { append(0x2C) }
            return
        }
        let pad = (depth + baseDepth) * indent
        let out = reserve(pad + 2)
        var i = 0
        if comma { out[0] = 0x2C; i = 1 }
        i += Self.lineBreak(at: out + i, pad: pad)
        commit(i)
    }

    /// What goes before a value: nothing right after its key, else the separator inside a container.
    @inline(__always) private func beforeValue() {
        if afterKey { afterKey = false; return }
        if depth > 0 { separator() }
    }

    public func beginObject() { beforeValue(); append(0x7B); push() }
    public func endObject() { close(0x7D) }
    public func beginArray() { beforeValue(); append(0x5B); push() }
    public func endArray() { close(0x5D) }

    /// The closing bracket, on a line of its own when the container had items (indented output).
    private func close(_ c: UInt8) {
        let onItsOwnLine = pop() && indent > 0
        guard onItsOwnLine else { append(c); return }
        let pad = (depth + baseDepth) * indent
        let out = reserve(pad + 2)
        let i = Self.lineBreak(at: out, pad: pad)
        out[i] = c
        commit(i + 1)
    }

    /// A key known when the program is written: copied as is (keys are plain ASCII, no escaping).
    @inline(__always)
    public func key(_ k: StaticString) {
        if depth > 0 && !afterKey { separator() }
        let n = k.utf8CodeUnitCount
        let out = reserve(n + 4)
        out[0] = 0x22
        ByteBuffer.copy(UnsafeRawPointer(k.utf8Start), n, to: out + 1)
        out[n + 1] = 0x22
        out[n + 2] = 0x3A
        var i = n + 3
        if indent > 0 { out[i] = 0x20; i += 1 }
        commit(i)
        afterKey = true
    }

    /// A key made at run time (escaped like any string).
    public func key(text k: String) {
        beforeValue()
        appendQuoted(k)
        append(0x3A)
        if indent > 0 { append(0x20) }
        afterKey = true
    }

    public func string(_ s: String) { beforeValue(); appendQuoted(s) }
    public func string(_ k: StaticString, _ s: String) { key(k); string(s) }
    public func optionalString(_ k: StaticString, _ s: String?) { key(k); if let s { string(s) } else { null() } }
    public func int<T: BinaryInteger>(_ v: T) {
        beforeValue()
        JSONWriter.appendInteger(Int64(clamping: v), to: self)
    }

    /// Decimal digits of `value`, written in place after one capacity check.
    @inline(__always) static func appendInteger(_ value: Int64, to out: ByteBuffer) {
        if value >= 0 && value < 10 { out.append(UInt8(48 + value)); return }
        let sign = value < 0 ? 1 : 0
        let p = out.reserve(20)
        if sign == 1 { p[0] = 0x2D }
        out.commit(sign + writeDigits(value.magnitude, at: p + sign))
    }

    /// The decimal digits of `value` at `p` (room for 20); answers how many. The outputs' one
    /// digit writer: integers, the whole part of numbers, cache durations.
    @inline(__always) static func writeDigits(_ value: UInt64, at p: UnsafeMutablePointer<UInt8>) -> Int {
        var digits = 1
        var rest = value
        while rest >= 10 { rest /= 10; digits += 1 }
        var v = value
        var i = digits
        repeat { i -= 1; p[i] = UInt8(truncatingIfNeeded: 48 &+ v % 10); v /= 10 } while v > 0
        return digits
    }
    public func int<T: BinaryInteger>(_ k: StaticString, _ v: T) { key(k); int(v) }
    public func bool(_ v: Bool) {
        beforeValue()
        // StaticString spelled out: a bare literal in `v ? "true" : "false"` is a String, and
        // making it cost ~150 instructions a call (73,000 calls in the 200 MB benchmark's HAR).
        if v { append("true" as StaticString) } else { append("false" as StaticString) }
    }
    public func bool(_ k: StaticString, _ v: Bool) { key(k); bool(v) }
    public func null() { beforeValue(); append("null" as StaticString) }

    /// A number with at most `decimals` digits after the point, never in exponent form.
    public func number(_ v: Double, decimals: Int = 3) {
        beforeValue()
        JSONWriter.appendNumber(v, decimals: decimals, to: self)
    }
    public func number(_ k: StaticString, _ v: Double, decimals: Int = 3) { key(k); number(v, decimals: decimals) }
    public func optionalNumber(_ k: StaticString, _ v: Double?, decimals: Int = 3) {
        key(k)
        if let v { number(v, decimals: decimals) } else { null() }
    }

    /// A string value whose bytes `body` appends; they must need no escaping (digits, dots, ASCII
    /// letters), e.g. addresses and timestamps written without making a String.
    @inline(__always)
    public func plainString(_ k: StaticString, _ body: (ByteBuffer) -> Void) {
        key(k)
        beforeValue()
        append(0x22)
        body(self)
        append(0x22)
    }

    /// What `headerValue` writes for a field that is not there.
    public enum Absent { case null, empty }

    /// The first `id` field of `headers` as a string, or null (or "") when absent (or no message).
    /// ASCII values are copied from the header buffer; others go through the wire-text decoding.
    public func headerValue(_ k: StaticString, _ headers: HeaderFields?, _ id: FieldName, absent: Absent = .null) {
        key(k)
        guard let headers, let i = headers.index(of: id) else {
            if absent == .null { null() } else { beforeValue(); append(0x22, 0x22) }
            return
        }
        fieldText(headers, at: i, name: false)
    }

    /// Field `i`'s name or value as a string value. ASCII text is copied from the header buffer;
    /// other bytes go through the wire-text decoding (UTF-8, else ISO-8859-1).
    public func fieldText(_ headers: HeaderFields, at i: Int, name: Bool) {
        beforeValue()
        let body: (UnsafeBufferPointer<UInt8>) -> Bool = { text in
            let mark = self.count
            self.append(0x22)
            guard self.appendEscaped(text, asciiOnly: true) else {
                self.truncate(to: mark)
                return false
            }
            self.append(0x22)
            return true
        }
        let ascii = name ? headers.withNameBytes(at: i, body) : headers.withValueBytes(at: i, body)
        if !ascii { appendQuoted(name ? headers.name(at: i) : headers.value(at: i)) }
    }

    /// `{"name": …, "value": …}` as the next item of the open array, written in one run (HAR's
    /// header and cookie lists: the most frequent object of a HAR). Only for text that needs no
    /// escaping (ASCII without control characters, quotes or backslashes): answers false and
    /// writes nothing otherwise. The bytes are exactly what the item-by-item calls would write.
    public func nameValueObject(_ name: UnsafeBufferPointer<UInt8>, _ value: UnsafeBufferPointer<UInt8>) -> Bool {
        guard !afterKey, depth > 0, Self.isPlain(name), Self.isPlain(value) else { return false }
        let comma = topHasItems
        markTopHasItems()
        if indent == 0 {
            // ,{"name":"…","value":"…"}
            let out = reserve(name.count + value.count + 24)
            var i = 0
            if comma { out[i] = 0x2C; i += 1 }
            i += Self.put("{\"name\":\"", at: out + i)
            i += Self.put(name, at: out + i)
            i += Self.put("\",\"value\":\"", at: out + i)
            i += Self.put(value, at: out + i)
            i += Self.put("\"}", at: out + i)
            commit(i)
            return true
        }
        let outer = (depth + baseDepth) * indent
        let inner = outer + indent
        let out = reserve(name.count + value.count + 3 * inner + outer + 32)
        var i = 0
        if comma { out[i] = 0x2C; i += 1 }
        i += Self.lineBreak(at: out + i, pad: outer)
        out[i] = 0x7B; i += 1
        i += Self.lineBreak(at: out + i, pad: inner)
        i += Self.put("\"name\": \"", at: out + i)
        i += Self.put(name, at: out + i)
        out[i] = 0x22; out[i + 1] = 0x2C; i += 2
        i += Self.lineBreak(at: out + i, pad: inner)
        i += Self.put("\"value\": \"", at: out + i)
        i += Self.put(value, at: out + i)
        out[i] = 0x22; i += 1
        i += Self.lineBreak(at: out + i, pad: outer)
        out[i] = 0x7D; i += 1
        commit(i)
        return true
    }

    @inline(__always) private static func put(_ s: StaticString, at p: UnsafeMutablePointer<UInt8>) -> Int {
        ByteBuffer.copy(UnsafeRawPointer(s.utf8Start), s.utf8CodeUnitCount, to: p)
        return s.utf8CodeUnitCount
    }

    /// Copies `b` to `p` (an empty buffer may have no address); answers how many bytes.
    @inline(__always) private static func put(_ b: UnsafeBufferPointer<UInt8>, at p: UnsafeMutablePointer<UInt8>) -> Int {
        if let base = b.baseAddress { ByteBuffer.copy(UnsafeRawPointer(base), b.count, to: p) }
        return b.count
    }

    /// No byte of `b` needs escaping, and all are ASCII.
    @inline(__always) static func isPlain(_ b: UnsafeBufferPointer<UInt8>) -> Bool {
        guard let base = b.baseAddress else { return true }
        return plainRun(base, from: 0, to: b.count, asciiOnly: true) == b.count
    }

    /// Where the run of bytes from `start` that go into a JSON string as they are ends: the index
    /// of the first control character, quote or backslash (with `asciiOnly`, also of the first
    /// byte ≥ 0x80) before `end`, else `end`.
    ///
    /// Eight bytes at a time (SWAR, as simdjson's and Go's encoders scan): for each test, the
    /// classic "has a byte less than n" / "has a zero byte" expressions set the high bit of every
    /// byte that passes it, and of no byte below the first one that does (a false positive needs
    /// a borrow out of a lower byte that passed), so the lowest set bit is the first such byte.
    /// About a fifth of the byte-by-byte table lookup's instructions on header text.
    @inline(__always)
    static func plainRun(_ base: UnsafePointer<UInt8>, from start: Int, to end: Int, asciiOnly: Bool) -> Int {
        let ones: UInt64 = 0x0101_0101_0101_0101
        let highs: UInt64 = 0x8080_8080_8080_8080
        let raw = UnsafeRawPointer(base)
        var i = start
        while i + 8 <= end {
            let x = UInt64(littleEndian: raw.loadUnaligned(fromByteOffset: i, as: UInt64.self))
            let quote = x ^ (ones &* 0x22)
            let backslash = x ^ (ones &* 0x5C)
            var m = ((x &- ones &* 0x20) & ~x) | ((quote &- ones) & ~quote) | ((backslash &- ones) & ~backslash)
            if asciiOnly { m |= x }
            m &= highs
            if m != 0 { return i + m.trailingZeroBitCount >> 3 }
            i += 8
        }
        while i < end {
            let c = base[i]
            if c < 0x20 || c == 0x22 || c == 0x5C || (asciiOnly && c >= 0x80) { return i }
            i += 1
        }
        return end
    }

    /// Raw JSON text as a value (already valid JSON).
    public func raw(_ json: [UInt8]) { beforeValue(); append(json) }

    static func appendNumber(_ v: Double, decimals: Int, to out: ByteBuffer) {
        guard v.isFinite else { out.append("null" as StaticString); return }
        let decimals = max(0, min(9, decimals))
        var scale: UInt64 = 1
        for _ in 0..<decimals { scale &*= 10 }
        let scaled = (v * Double(scale)).rounded()   // Double(scale) is exact: at most 1e9
        if abs(scaled) >= 9e18 { out.append(String(v)); return }
        let signed = Int64(scaled)
        let negative = signed < 0
        let magnitude = signed.magnitude
        // HAR's milliseconds (3 decimals) are most numbers: a constant divisor is a multiply.
        let whole: UInt64
        var frac: UInt64
        if decimals == 3 { (whole, frac) = (magnitude / 1000, magnitude % 1000) } else { (whole, frac) = (magnitude / scale, magnitude % scale) }
        // Written in place after one capacity check: the sign, the whole part, then the point
        // and the fraction without its trailing zeros (none when it is zero).
        let p = out.reserve(32)
        var i = 0
        if negative { p[0] = 0x2D; i = 1 }
        i += writeDigits(whole, at: p + i)
        if frac != 0 {
            var fractionDigits = decimals
            while frac % 10 == 0 { frac /= 10; fractionDigits -= 1 }
            p[i] = 0x2E
            var k = i + fractionDigits
            while k > i { p[k] = UInt8(truncatingIfNeeded: 48 &+ frac % 10); frac /= 10; k -= 1 }
            i += fractionDigits + 1
        }
        out.commit(i)
    }

    /// Appends `s` as a JSON string, escaping quotes, backslashes and control characters.
    @inline(__always) func appendQuoted(_ s: String) {
        withUTF8Bytes(of: s) { appendQuoted(bytes: $0) }
    }

    /// A string value from UTF-8 bytes (escaped as needed).
    public func string(bytes utf8: UnsafeBufferPointer<UInt8>) { beforeValue(); appendQuoted(bytes: utf8) }

    /// A string value assembled by `body`, which appends escaped text with `appendEscaped` and
    /// plain ASCII directly: one value from several pieces without making a String.
    @inline(__always)
    public func composedString(_ body: (JSONWriter) -> Void) {
        beforeValue()
        append(0x22)
        body(self)
        append(0x22)
    }

    /// Appends UTF-8 `utf8` as a JSON string; runs without escapes are copied whole.
    func appendQuoted(bytes utf8: UnsafeBufferPointer<UInt8>) {
        append(0x22)
        appendEscaped(utf8)
        append(0x22)
    }

    /// The bytes `appendEscaped` makes of `bytes`: \n, \r, \t, quotes and backslashes take two,
    /// other control characters six (\u00XX).
    static func escapedLength(_ bytes: [UInt8]) -> Int {
        var n = bytes.count
        for b in bytes where b < 0x20 || b == 0x22 || b == 0x5C {
            n += (b == 0x0A || b == 0x0D || b == 0x09 || b == 0x22 || b == 0x5C) ? 1 : 5
        }
        return n
    }

    /// Appends UTF-8 `utf8` escaped for the inside of a JSON string (no quotes). With
    /// `asciiOnly`, stops at the first non-ASCII byte and answers false (what was appended stays).
    /// Runs without escapes are copied whole (`plainRun` finds their ends).
    @discardableResult
    func appendEscaped(_ utf8: UnsafeBufferPointer<UInt8>, asciiOnly: Bool = false) -> Bool {
        guard let base = utf8.baseAddress else { return true }
        let n = utf8.count
        var i = 0
        while true {
            let stop = Self.plainRun(base, from: i, to: n, asciiOnly: asciiOnly)
            if stop == n {
                append(UnsafeRawPointer(base + i), count: n - i)
                return true
            }
            let c = base[stop]
            if c >= 0x80 { return false }
            append(UnsafeRawPointer(base + i), count: stop - i)
            switch c {
            case 0x22: append(0x5C, 0x22)
            case 0x5C: append(0x5C, 0x5C)
            case 0x0A: append(0x5C, 0x6E)
            case 0x0D: append(0x5C, 0x72)
            case 0x09: append(0x5C, 0x74)
            default:
                let hex: StaticString = "0123456789abcdef"
                let h = hex.utf8Start
                append(0x5C, 0x75); append(0x30, 0x30)
                append(h[Int(c >> 4)], h[Int(c & 15)])
            }
            i = stop + 1
        }
    }
}

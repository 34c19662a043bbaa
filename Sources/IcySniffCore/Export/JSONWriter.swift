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
        (out + 1).update(from: k.utf8Start, count: n)
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

    /// Decimal digits of `value`, written backwards in place after one capacity check.
    @inline(__always) static func appendInteger(_ value: Int64, to out: ByteBuffer) {
        if value >= 0 && value < 10 { out.append(UInt8(48 + value)); return }
        var magnitude = value.magnitude
        var digits = 0
        var m = magnitude
        repeat { digits += 1; m /= 10 } while m > 0
        let n = digits + (value < 0 ? 1 : 0)
        let p = out.reserve(n)
        var i = n
        repeat {
            i -= 1
            p[i] = UInt8(48 + magnitude % 10)
            magnitude /= 10
        } while magnitude > 0
        if value < 0 { p[0] = 0x2D }
        out.commit(n)
    }
    public func int<T: BinaryInteger>(_ k: StaticString, _ v: T) { key(k); int(v) }
    public func bool(_ v: Bool) { beforeValue(); append(v ? "true" : "false") }
    public func bool(_ k: StaticString, _ v: Bool) { key(k); bool(v) }
    public func null() { beforeValue(); append("null") }

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
        p.update(from: s.utf8Start, count: s.utf8CodeUnitCount)
        return s.utf8CodeUnitCount
    }

    /// Copies `b` to `p` (an empty buffer may have no address); answers how many bytes.
    @inline(__always) private static func put(_ b: UnsafeBufferPointer<UInt8>, at p: UnsafeMutablePointer<UInt8>) -> Int {
        if let base = b.baseAddress { p.update(from: base, count: b.count) }
        return b.count
    }

    /// No byte of `b` needs escaping, and all are ASCII.
    @inline(__always) static func isPlain(_ b: UnsafeBufferPointer<UInt8>) -> Bool {
        needsEscape.withUnsafeBufferPointer { table in
            for c in b where table[256 + Int(c)] { return false }
            return true
        }
    }

    /// Raw JSON text as a value (already valid JSON).
    public func raw(_ json: [UInt8]) { beforeValue(); append(json) }

    static func appendNumber(_ v: Double, decimals: Int, to out: ByteBuffer) {
        guard v.isFinite else { out.append("null"); return }
        let decimals = max(0, min(9, decimals))
        var scale = 1.0
        for _ in 0..<decimals { scale *= 10 }   // exact: powers of ten up to 1e9
        let scaled = (v * scale).rounded()
        if abs(scaled) >= 9e18 { out.append(String(v)); return }
        var n = Int64(scaled)
        let negative = n < 0
        if negative { n = -n }
        let s = Int64(scale)
        var whole = n / s
        var frac = n % s
        // Written backwards into a stack buffer: the fraction without its trailing zeros, the
        // point, the whole part, the sign; then appended once.
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 32) { buf in
            var i = 32
            if frac != 0 {
                var digits = decimals
                while frac % 10 == 0 { frac /= 10; digits -= 1 }
                while digits > 0 { i -= 1; buf[i] = UInt8(truncatingIfNeeded: 48 + frac % 10); frac /= 10; digits -= 1 }
                i -= 1; buf[i] = 0x2E
            }
            repeat { i -= 1; buf[i] = UInt8(truncatingIfNeeded: 48 + whole % 10); whole /= 10 } while whole > 0
            if negative { i -= 1; buf[i] = 0x2D }
            out.append(UnsafeBufferPointer(rebasing: buf[i..<32]))
        }
    }

    /// Bytes that cannot appear raw inside a JSON string: control characters, `"` and `\`; and
    /// (second half of the table) the same plus every non-ASCII byte.
    static let needsEscape: [Bool] = (0..<512).map { $0 & 0xFF < 0x20 || $0 & 0xFF == 0x22 || $0 & 0xFF == 0x5C || $0 >= 0x180 }

    /// Appends `s` as a JSON string, escaping quotes, backslashes and control characters.
    @inline(__always) func appendQuoted(_ s: String) {
        var str = s
        str.withUTF8 { appendQuoted(bytes: $0) }
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
    @discardableResult
    func appendEscaped(_ utf8: UnsafeBufferPointer<UInt8>, asciiOnly: Bool = false) -> Bool {
        Self.needsEscape.withUnsafeBufferPointer { table in
            let table = UnsafeBufferPointer(rebasing: table[(asciiOnly ? 256 : 0)...])
            var runStart = 0
            var i = 0
            let n = utf8.count
            while i < n {
                let c = utf8[i]
                if !table[Int(c)] { i += 1; continue }
                if c >= 0x80 { return false }
                if i > runStart { append(UnsafeBufferPointer(rebasing: utf8[runStart..<i])) }
                runStart = i + 1
                i += 1
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
            }
            if n > runStart { append(UnsafeBufferPointer(rebasing: utf8[runStart..<n])) }
            return true
        }
    }
}

/// A streaming JSON writer that appends to a reused byte buffer (in the style of Suricata's
/// JsonBuilder): no object graph, no Foundation. Commas are placed automatically.
public struct JSONWriter {
    public var bytes: [UInt8] = []
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
        bytes.reserveCapacity(capacity)
    }

    public mutating func reset() {
        bytes.removeAll(keepingCapacity: true)
        depth = 0
        commaBits = 0
        deepCommas.removeAll(keepingCapacity: true)
        afterKey = false
    }

    @inline(__always) private var topHasItems: Bool {
        depth <= 64 ? (commaBits >> UInt64(depth - 1)) & 1 == 1 : deepCommas[depth - 65]
    }

    @inline(__always) private mutating func markTopHasItems() {
        if depth <= 64 { commaBits |= 1 << UInt64(depth - 1) } else { deepCommas[depth - 65] = true }
    }

    @inline(__always) private mutating func push() {
        depth += 1
        if depth <= 64 { commaBits &= ~(1 << UInt64(depth - 1)) } else { deepCommas.append(false) }
    }

    /// Closes the innermost container; answers whether it had items.
    @inline(__always) private mutating func pop() -> Bool {
        guard depth > 0 else { return false }
        let had = topHasItems
        if depth > 64 { deepCommas.removeLast() }
        depth -= 1
        return had
    }

    /// A line break and `pad` spaces at `base`; answers how many bytes that is.
    @inline(__always) private static func lineBreak(at base: UnsafeMutablePointer<UInt8>, pad: Int) -> Int {
        base[0] = 0x0A
        (base + 1).initialize(repeating: 0x20, count: pad)
        return 1 + pad
    }

    /// What goes before a value: nothing right after its key; inside a container a comma after an
    /// earlier item, then (indented output) a line break and the indentation; with `key`, the key
    /// and its colon. Put together on the stack and appended once — this runs for every value
    /// and key, so it is the writer's hottest path.
    @inline(__always) private mutating func beforeValue(key k: StaticString? = nil) {
        let separated = !afterKey && depth > 0
        afterKey = k != nil
        let comma = separated && topHasItems
        if separated { markTopHasItems() }
        let pad = separated && indent > 0 ? (depth + baseDepth) * indent : 0
        guard separated || k != nil else { return }   // a value right after its key: nothing
        (k ?? "").withUTF8Buffer { key in
            withUnsafeTemporaryAllocation(of: UInt8.self, capacity: pad + key.count + 6) { buf in
                let base = buf.baseAddress!
                var i = 0
                if comma { base[i] = 0x2C; i += 1 }
                if separated && indent > 0 { i += Self.lineBreak(at: base + i, pad: pad) }
                if k != nil {
                    base[i] = 0x22; i += 1
                    if let start = key.baseAddress { (base + i).initialize(from: start, count: key.count) }
                    i += key.count
                    base[i] = 0x22; base[i + 1] = 0x3A; i += 2
                    if indent > 0 { base[i] = 0x20; i += 1 }
                }
                bytes.append(contentsOf: UnsafeBufferPointer(start: base, count: i))
            }
        }
    }

    public mutating func beginObject() { beforeValue(); bytes.append(0x7B); push() }
    public mutating func endObject() { close(0x7D) }
    public mutating func beginArray() { beforeValue(); bytes.append(0x5B); push() }
    public mutating func endArray() { close(0x5D) }

    /// The closing bracket, on a line of its own when the container had items (indented output).
    private mutating func close(_ c: UInt8) {
        let onItsOwnLine = pop() && indent > 0
        let pad = onItsOwnLine ? (depth + baseDepth) * indent : 0
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: pad + 2) { buf in
            let base = buf.baseAddress!
            let i = onItsOwnLine ? Self.lineBreak(at: base, pad: pad) : 0
            base[i] = c
            bytes.append(contentsOf: UnsafeBufferPointer(start: base, count: i + 1))
        }
    }

    /// A key known when the program is written: copied as is (keys are plain ASCII, no escaping).
    @inline(__always)
    public mutating func key(_ k: StaticString) { beforeValue(key: k) }

    /// A key made at run time (escaped like any string).
    public mutating func key(text k: String) {
        beforeValue()
        appendQuoted(k)
        bytes.append(0x3A)
        if indent > 0 { bytes.append(0x20) }
        afterKey = true
    }

    public mutating func string(_ s: String) { beforeValue(); appendQuoted(s) }
    public mutating func string(_ k: StaticString, _ s: String) { key(k); string(s) }
    public mutating func optionalString(_ k: StaticString, _ s: String?) { key(k); if let s { string(s) } else { null() } }
    public mutating func int<T: BinaryInteger>(_ v: T) {
        beforeValue()
        JSONWriter.appendInteger(Int64(clamping: v), to: &bytes)
    }

    @inline(__always) static func appendInteger(_ value: Int64, to out: inout [UInt8]) {
        if value >= 0 && value < 10 { out.append(UInt8(48 + value)); return }
        var magnitude = value.magnitude
        // Digits are written backwards into a 20-byte stack buffer, then copied once.
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 21) { digits in
            var i = 21
            repeat {
                i -= 1
                digits[i] = UInt8(48 + magnitude % 10)
                magnitude /= 10
            } while magnitude > 0
            if value < 0 { i -= 1; digits[i] = 0x2D }
            out.append(contentsOf: UnsafeBufferPointer(rebasing: digits[i..<21]))
        }
    }
    public mutating func int<T: BinaryInteger>(_ k: StaticString, _ v: T) { key(k); int(v) }
    public mutating func bool(_ v: Bool) { beforeValue(); bytes.append(contentsOf: (v ? "true" : "false").utf8) }
    public mutating func bool(_ k: StaticString, _ v: Bool) { key(k); bool(v) }
    public mutating func null() { beforeValue(); bytes.append(contentsOf: "null".utf8) }

    /// A number with at most `decimals` digits after the point, never in exponent form.
    public mutating func number(_ v: Double, decimals: Int = 3) {
        beforeValue()
        JSONWriter.appendNumber(v, decimals: decimals, to: &bytes)
    }
    public mutating func number(_ k: StaticString, _ v: Double, decimals: Int = 3) { key(k); number(v, decimals: decimals) }
    public mutating func optionalNumber(_ k: StaticString, _ v: Double?, decimals: Int = 3) {
        key(k)
        if let v { number(v, decimals: decimals) } else { null() }
    }

    /// A string value whose bytes `body` appends; they must need no escaping (digits, dots, ASCII
    /// letters), e.g. addresses and timestamps written without making a String.
    @inline(__always)
    public mutating func plainString(_ k: StaticString, _ body: (inout [UInt8]) -> Void) {
        key(k)
        beforeValue()
        bytes.append(0x22)
        body(&bytes)
        bytes.append(0x22)
    }

    /// The first `id` field of `headers` as a string, or null when absent (or no message). ASCII
    /// values are copied from the header buffer; others go through the wire-text decoding.
    public mutating func headerValue(_ k: StaticString, _ headers: HeaderFields?, _ id: FieldName) {
        key(k)
        guard let headers, let i = headers.index(of: id) else { null(); return }
        fieldText(headers, at: i, name: false)
    }

    /// Field `i`'s name or value as a string value. ASCII text is copied from the header buffer;
    /// other bytes go through the wire-text decoding (UTF-8, else ISO-8859-1).
    public mutating func fieldText(_ headers: HeaderFields, at i: Int, name: Bool) {
        beforeValue()
        let body: (UnsafeBufferPointer<UInt8>) -> Bool = { text in
            let mark = self.bytes.count
            self.bytes.append(0x22)
            guard self.appendEscaped(text, asciiOnly: true) else {
                self.bytes.removeSubrange(mark...)
                return false
            }
            self.bytes.append(0x22)
            return true
        }
        let ascii = name ? headers.withNameBytes(at: i, body) : headers.withValueBytes(at: i, body)
        if !ascii { appendQuoted(name ? headers.name(at: i) : headers.value(at: i)) }
    }

    /// Raw JSON text as a value (already valid JSON).
    public mutating func raw(_ json: [UInt8]) { beforeValue(); bytes.append(contentsOf: json) }

    static func appendNumber(_ v: Double, decimals: Int, to out: inout [UInt8]) {
        guard v.isFinite else { out.append(contentsOf: "null".utf8); return }
        let decimals = max(0, min(9, decimals))
        var scale = 1.0
        for _ in 0..<decimals { scale *= 10 }   // exact: powers of ten up to 1e9
        let scaled = (v * scale).rounded()
        if abs(scaled) >= 9e18 { out.append(contentsOf: String(v).utf8); return }
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
            out.append(contentsOf: UnsafeBufferPointer(rebasing: buf[i..<32]))
        }
    }

    /// Bytes that cannot appear raw inside a JSON string: control characters, `"` and `\`; and
    /// (second half of the table) the same plus every non-ASCII byte.
    static let needsEscape: [Bool] = (0..<512).map { $0 & 0xFF < 0x20 || $0 & 0xFF == 0x22 || $0 & 0xFF == 0x5C || $0 >= 0x180 }

    /// Appends `s` as a JSON string, escaping quotes, backslashes and control characters.
    @inline(__always) mutating func appendQuoted(_ s: String) {
        var str = s
        str.withUTF8 { appendQuoted(bytes: $0) }
    }

    /// A string value from UTF-8 bytes (escaped as needed).
    public mutating func string(bytes utf8: UnsafeBufferPointer<UInt8>) { beforeValue(); appendQuoted(bytes: utf8) }

    /// A string value assembled by `body`, which appends escaped text with `appendEscaped` and
    /// plain ASCII directly: one value from several pieces without making a String.
    @inline(__always)
    public mutating func composedString(_ body: (inout JSONWriter) -> Void) {
        beforeValue()
        bytes.append(0x22)
        body(&self)
        bytes.append(0x22)
    }

    /// Appends UTF-8 `utf8` as a JSON string; runs without escapes are copied whole.
    mutating func appendQuoted(bytes utf8: UnsafeBufferPointer<UInt8>) {
        bytes.append(0x22)
        appendEscaped(utf8)
        bytes.append(0x22)
    }

    /// Appends UTF-8 `utf8` escaped for the inside of a JSON string (no quotes). With
    /// `asciiOnly`, stops at the first non-ASCII byte and answers false (what was appended stays).
    @discardableResult
    mutating func appendEscaped(_ utf8: UnsafeBufferPointer<UInt8>, asciiOnly: Bool = false) -> Bool {
        Self.needsEscape.withUnsafeBufferPointer { table in
            let table = UnsafeBufferPointer(rebasing: table[(asciiOnly ? 256 : 0)...])
            var runStart = 0
            var i = 0
            let n = utf8.count
            while i < n {
                let c = utf8[i]
                if !table[Int(c)] { i += 1; continue }
                if c >= 0x80 { return false }
                if i > runStart { bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[runStart..<i])) }
                runStart = i + 1
                i += 1
                switch c {
                case 0x22: bytes.append(0x5C); bytes.append(0x22)
                case 0x5C: bytes.append(0x5C); bytes.append(0x5C)
                case 0x0A: bytes.append(0x5C); bytes.append(0x6E)
                case 0x0D: bytes.append(0x5C); bytes.append(0x72)
                case 0x09: bytes.append(0x5C); bytes.append(0x74)
                default:
                    let hex: StaticString = "0123456789abcdef"
                    let h = hex.utf8Start
                    bytes.append(0x5C); bytes.append(0x75); bytes.append(0x30); bytes.append(0x30)
                    bytes.append(h[Int(c >> 4)]); bytes.append(h[Int(c & 15)])
                }
            }
            if n > runStart { bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[runStart..<n])) }
            return true
        }
    }
}

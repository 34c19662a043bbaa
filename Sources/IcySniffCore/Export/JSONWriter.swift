/// A streaming JSON writer that appends to a reused byte buffer (in the style of Suricata's
/// JsonBuilder): no object graph, no Foundation. Commas are placed automatically.
public struct JSONWriter {
    public var bytes: [UInt8] = []
    private var needsComma: [Bool] = []
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
        needsComma.removeAll(keepingCapacity: true)
        afterKey = false
    }

    @inline(__always) private mutating func newline() {
        guard indent > 0 else { return }
        bytes.append(0x0A)
        for _ in 0..<((needsComma.count + baseDepth) * indent) { bytes.append(0x20) }
    }

    @inline(__always) private mutating func beforeValue() {
        if afterKey { afterKey = false; return }
        if let last = needsComma.last {
            if last { bytes.append(0x2C) }
            needsComma[needsComma.count - 1] = true
            newline()
        }
    }

    public mutating func beginObject() { beforeValue(); bytes.append(0x7B); needsComma.append(false) }
    public mutating func endObject() { close(0x7D) }
    public mutating func beginArray() { beforeValue(); bytes.append(0x5B); needsComma.append(false) }
    public mutating func endArray() { close(0x5D) }

    private mutating func close(_ c: UInt8) {
        let hadItems = needsComma.popLast() ?? false
        if hadItems { newline() }
        bytes.append(c)
    }

    public mutating func key(_ k: String) {
        beforeValue()
        appendQuoted(k)
        bytes.append(0x3A)
        if indent > 0 { bytes.append(0x20) }
        afterKey = true
    }

    public mutating func string(_ s: String) { beforeValue(); appendQuoted(s) }
    public mutating func string(_ k: String, _ s: String) { key(k); string(s) }
    public mutating func optionalString(_ k: String, _ s: String?) { key(k); if let s { string(s) } else { null() } }
    public mutating func int<T: BinaryInteger>(_ v: T) {
        beforeValue()
        JSONWriter.appendInteger(Int64(clamping: v), to: &bytes)
    }

    @inline(__always) static func appendInteger(_ value: Int64, to out: inout [UInt8]) {
        var v = value
        if v < 0 {
            out.append(0x2D)
            if v == Int64.min { out.append(contentsOf: "9223372036854775808".utf8); return }
            v = -v
        }
        if v < 10 { out.append(UInt8(48 + v)); return }
        let start = out.count
        while v > 0 { out.append(UInt8(48 + v % 10)); v /= 10 }
        out[start...].reverse()
    }
    public mutating func int<T: BinaryInteger>(_ k: String, _ v: T) { key(k); int(v) }
    public mutating func bool(_ v: Bool) { beforeValue(); bytes.append(contentsOf: (v ? "true" : "false").utf8) }
    public mutating func bool(_ k: String, _ v: Bool) { key(k); bool(v) }
    public mutating func null() { beforeValue(); bytes.append(contentsOf: "null".utf8) }

    /// A number with at most `decimals` digits after the point, never in exponent form.
    public mutating func number(_ v: Double, decimals: Int = 3) {
        beforeValue()
        JSONWriter.appendNumber(v, decimals: decimals, to: &bytes)
    }
    public mutating func number(_ k: String, _ v: Double, decimals: Int = 3) { key(k); number(v, decimals: decimals) }
    public mutating func optionalNumber(_ k: String, _ v: Double?, decimals: Int = 3) {
        key(k)
        if let v { number(v, decimals: decimals) } else { null() }
    }

    /// Raw JSON text as a value (already valid JSON).
    public mutating func raw(_ json: [UInt8]) { beforeValue(); bytes.append(contentsOf: json) }

    static func appendNumber(_ v: Double, decimals: Int, to out: inout [UInt8]) {
        guard v.isFinite else { out.append(contentsOf: "null".utf8); return }
        var scale: Double = 1
        for _ in 0..<decimals { scale *= 10 }
        let scaled = (v * scale).rounded()
        if abs(scaled) >= 9e18 { out.append(contentsOf: String(v).utf8); return }
        var n = Int64(scaled)
        if n < 0 { out.append(0x2D); n = -n }
        let s = Int64(scale)
        appendInteger(n / s, to: &out)
        var frac = n % s
        if frac != 0 && decimals > 0 {
            out.append(0x2E)
            var digits = [UInt8](repeating: 0x30, count: decimals)
            var i = decimals - 1
            while i >= 0 { digits[i] = UInt8(0x30 + frac % 10); frac /= 10; i -= 1 }
            while digits.last == 0x30 { digits.removeLast() }
            out.append(contentsOf: digits)
        }
    }

    /// Appends `s` as a JSON string, escaping quotes, backslashes and control characters.
    @inline(__always) mutating func appendQuoted(_ s: String) {
        bytes.append(0x22)
        var str = s
        str.withUTF8 { utf8 in
            var runStart = 0
            for i in 0..<utf8.count {
                let c = utf8[i]
                if c >= 0x20 && c != 0x22 && c != 0x5C { continue }
                if i > runStart { bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[runStart..<i])) }
                runStart = i + 1
                switch c {
                case 0x22: bytes.append(0x5C); bytes.append(0x22)
                case 0x5C: bytes.append(0x5C); bytes.append(0x5C)
                case 0x0A: bytes.append(0x5C); bytes.append(0x6E)
                case 0x0D: bytes.append(0x5C); bytes.append(0x72)
                case 0x09: bytes.append(0x5C); bytes.append(0x74)
                default:
                    let hex = Array("0123456789abcdef".utf8)
                    bytes.append(contentsOf: [0x5C, 0x75, 0x30, 0x30, hex[Int(c >> 4)], hex[Int(c & 15)]])
                }
            }
            if utf8.count > runStart { bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[runStart..<utf8.count])) }
        }
        bytes.append(0x22)
    }
}

/// Writes a `Comparison` (`icy-sniff diff`) as text for a terminal or as JSON for tools.
public enum ComparisonWriter {
    /// At most `maxLines` lines per list in the text (JSON has every one).
    public static func text(_ c: Comparison, maxLines: Int = 20, width: Int? = nil) -> String {
        var out = ""
        let lists = [c.added, c.removed, c.countChanged, c.statusChanged, c.cacheChanged, c.sizeChanged]
        let longest = lists.flatMap { $0.prefix(maxLines) }.map(\.url.count).max() ?? 0
        let urlWidth = min(max(30, (width ?? 120) - 34), max(longest, 10))
        func line(_ s: String = "") { out += s + "\n" }
        func request(_ ch: Comparison.Change, _ detail: String) {
            let method = ch.method.isEmpty ? "-" : ch.method
            line("  " + pad(method, 7) + " " + pad(ReportWriter.cut(ch.url, urlWidth), urlWidth) + "  " + detail)
        }
        func list(_ title: String, _ changes: [Comparison.Change], _ detail: (Comparison.Change) -> String) {
            guard !changes.isEmpty else { return }
            line()
            line("\(title) (\(changes.count))")
            for ch in changes.prefix(maxLines) { request(ch, detail(ch)) }
            if changes.count > maxLines { line("  … \(changes.count - maxLines) more (--format json lists every one)") }
        }
        let a = c.totalsBefore, b = c.totalsAfter
        line("icy-sniff diff: \(c.before) → \(c.after)")
        line("requests \(a.requests) → \(b.requests) (\(signed(b.requests - a.requests))), bytes \(bytes(a.bytes)) → \(bytes(b.bytes))"
             + " (\(percent(a.bytes, b.bytes))), avoidable \(a.avoidable) → \(b.avoidable)")
        if a.uncompared + b.uncompared > 0 {
            line("(\(a.uncompared + b.uncompared) requests past \(ComparisonSide.maxKeys) distinct URLs were counted, not compared one by one)")
        }
        if c.isEmpty { line(); line("no request added, removed or changed") }
        list("added", c.added) { ch in status(ch.after!) + "  " + bytes(ch.after!.bytesEach) + times(ch.after!.count) }
        list("removed", c.removed) { ch in status(ch.before!) + "  " + bytes(ch.before!.bytesEach) + times(ch.before!.count) }
        list("made more or fewer times", c.countChanged) { ch in "\(ch.before!.count) → \(ch.after!.count) times" }
        list("status changed", c.statusChanged) { ch in statuses(ch.before!) + " → " + statuses(ch.after!) }
        list("cache verdict changed", c.cacheChanged) { ch in verdicts(ch.before!) + " → " + verdicts(ch.after!) }
        list("size changed", c.sizeChanged) { ch in
            bytes(ch.before!.bytesEach) + " → " + bytes(ch.after!.bytesEach) + " (" + percent(ch.before!.bytesEach, ch.after!.bytesEach) + ")"
        }
        if !c.hosts.isEmpty {
            line()
            let hostWidth = max(20, min(40, c.hosts.map(\.host.count).max() ?? 20))
            line(pad("hosts", hostWidth + 2) + pad("requests", 14) + pad("bytes", 24) + "median time")
            for h in c.hosts.prefix(maxLines) {
                line("  " + pad(ReportWriter.cut(h.host, hostWidth), hostWidth) + pad("\(h.requestsBefore) → \(h.requestsAfter)", 14)
                     + pad("\(bytes(h.bytesBefore)) → \(bytes(h.bytesAfter))", 24) + "\(ReportWriter.ms(h.medianBefore)) → \(ReportWriter.ms(h.medianAfter))")
            }
            if c.hosts.count > maxLines { line("  … \(c.hosts.count - maxLines) more hosts") }
        }
        return out
    }

    public static func json(_ c: Comparison) -> [UInt8] {
        let w = JSONWriter(indent: 2)
        w.beginObject()
        w.string("before", c.before)
        w.string("after", c.after)
        for (key, t) in [("totalsBefore", c.totalsBefore), ("totalsAfter", c.totalsAfter)] {
            w.key(text: key); w.beginObject()
            w.int("requests", t.requests); w.int("bytes", t.bytes); w.int("avoidable", t.avoidable); w.int("uncompared", t.uncompared)
            w.endObject()
        }
        for (key, list) in [("added", c.added), ("removed", c.removed), ("countChanged", c.countChanged), ("statusChanged", c.statusChanged),
                            ("cacheChanged", c.cacheChanged), ("sizeChanged", c.sizeChanged)] {
            w.key(text: key); w.beginArray()
            for ch in list {
                w.beginObject()
                w.string("method", ch.method); w.string("url", ch.url); w.string("host", ch.host)
                for (name, side) in [("before", ch.before), ("after", ch.after)] {
                    w.key(text: name)
                    guard let s = side else { w.null(); continue }
                    w.beginObject()
                    w.int("count", s.count)
                    w.key("statuses"); w.beginObject()
                    for (status, n) in s.statuses.sorted(by: { $0.key < $1.key }) { w.key(text: String(status)); w.int(n) }
                    w.endObject()
                    w.key("verdicts"); w.beginObject()
                    for (verdict, n) in s.verdicts.sorted(by: { $0.key < $1.key }) { w.key(text: verdict.isEmpty ? "unknown" : verdict); w.int(n) }
                    w.endObject()
                    w.int("bytes", s.bytes)
                    w.int("bytesEach", s.bytesEach)
                    w.number("averageMilliseconds", s.averageMilliseconds)
                    w.endObject()
                }
                w.endObject()
            }
            w.endArray()
        }
        w.key("hosts"); w.beginArray()
        for h in c.hosts {
            w.beginObject()
            w.string("host", h.host)
            w.int("requestsBefore", h.requestsBefore); w.int("requestsAfter", h.requestsAfter)
            w.int("bytesBefore", h.bytesBefore); w.int("bytesAfter", h.bytesAfter)
            w.optionalNumber("medianMillisecondsBefore", h.medianBefore)
            w.optionalNumber("medianMillisecondsAfter", h.medianAfter)
            w.endObject()
        }
        w.endArray()
        w.endObject()
        w.append(0x0A)
        return w.array
    }

    static func pad(_ s: String, _ n: Int) -> String { s.count >= n ? s + " " : s + String(repeating: " ", count: n - s.count) }
    static func signed(_ n: Int) -> String { n > 0 ? "+\(n)" : "\(n)" }
    static func times(_ n: Int) -> String { n > 1 ? "  ×\(n)" : "" }
    static func bytes(_ n: Int) -> String { ReportWriter.bytes(UInt64(max(0, n))) }
    static func percent(_ a: Int, _ b: Int) -> String {
        guard a > 0 else { return b > 0 ? "new" : "±0%" }
        let p = (Double(b) - Double(a)) * 100 / Double(a)
        let r = (p * 10).rounded() / 10
        return (r > 0 ? "+" : "") + (r == r.rounded() ? "\(Int(r))" : "\(r)") + "%"
    }
    static func status(_ s: Comparison.Change.Side) -> String { s.status == 0 ? "no response" : String(s.status) }
    static func statuses(_ s: Comparison.Change.Side) -> String {
        s.statuses.sorted { $0.key < $1.key }.map { ($0.key == 0 ? "none" : String($0.key)) + ($0.value > 1 ? "×\($0.value)" : "") }
            .joined(separator: ", ")
    }
    static func verdicts(_ s: Comparison.Change.Side) -> String {
        s.verdicts.sorted { ($0.value, $1.key) > ($1.value, $0.key) }
            .map { ($0.key.isEmpty ? "unknown" : $0.key) + ($0.value > 1 ? "×\($0.value)" : "") }.joined(separator: ", ")
    }
}

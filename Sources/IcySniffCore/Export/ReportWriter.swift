/// Renders `Report`s as text for people or JSON for tools.
public enum ReportWriter {
    /// `width`: the terminal's width in cells: every line is made to fit it (a table narrows,
    /// URLs are cut in the middle, prose wraps with its indent); nil keeps lines whole (files,
    /// pipes: grep finds a whole URL).
    public static func text(_ r: Report, maxLines: Int = 10, width: Int? = nil) -> String {
        let text = unfitted(r, maxLines: maxLines, narrow: (width ?? .max) < 126)
        guard let width else { return text }
        var out = ""
        for line in text.split(separator: "\n", omittingEmptySubsequences: false).dropLast() {
            for piece in fit(String(line), width) { out += piece + "\n" }
        }
        return out
    }

    /// One line made to fit `width` cells: its longest URL (or page title) is cut in the middle
    /// to at least 24 cells, then what is still too long wraps at spaces, the rest indented.
    static func fit(_ line: String, _ width: Int) -> [String] {
        var line = line
        var excess = TableWriter.cells(line) - width
        if excess <= 0 { return [line] }
        var words = line.split(separator: " ", omittingEmptySubsequences: false).map(String.init)
        let urls = words.indices.filter { words[$0].hasPrefix("http://") || words[$0].hasPrefix("https://") }
        if let i = urls.max(by: { words[$0].count < words[$1].count }) {
            // The scheme stays whole; the rest is cut as the table cuts a URL (host/…/file).
            let scheme = words[i].hasPrefix("https://") ? "https://" : "http://"
            let rest = String(words[i].dropFirst(scheme.count))
            let room = max(16, TableWriter.cells(rest) - excess)
            words[i] = scheme + TableWriter.fit(rest, room, keepEnd: true)
            line = words.joined(separator: " ")
            excess = TableWriter.cells(line) - width
            if excess <= 0 { return [line] }
        }
        let lead = String(line.prefix { $0 == " " })
        let indent = lead + "    "
        var out: [String] = []
        var current = lead
        for word in line.dropFirst(lead.count).split(separator: " ", omittingEmptySubsequences: false) {
            let bare = current == lead || current == indent
            let candidate = bare ? current + word : current + " " + word
            if TableWriter.cells(candidate) > width && !bare {
                out.append(current)
                current = indent + word
            } else {
                current = candidate
            }
        }
        out.append(current)
        return out.map { piece in
            var piece = piece
            while piece.hasSuffix(" ") { piece.removeLast() }
            return TableWriter.cells(piece) > width ? TableWriter.fit(piece, width, keepEnd: false) : piece
        }
    }

    /// Milliseconds with one decimal and the unit; "-" for none (the report's and diff's).
    static func ms(_ v: Double?) -> String {
        guard let v else { return "-" }
        let w = ByteBuffer(capacity: 32)
        JSONWriter.appendNumber(v, decimals: 1, to: w)
        return w.text + " ms"
    }

    /// A byte count as the report and diff show it: B, kB past 10,000, MB past 10,000,000.
    static func bytes(_ n: UInt64) -> String {
        if n >= 10_000_000 { return "\(n / 1_000_000) MB" }
        if n >= 10_000 { return "\(n / 1000) kB" }
        return "\(n) B"
    }

    static func unfitted(_ r: Report, maxLines: Int, narrow: Bool) -> String {
        var out = ""
        func line(_ s: String = "") { out += s + "\n" }
        /// `s` right-aligned in `width` columns (`left`: left-aligned).
        func column(_ s: String, _ width: Int, left: Bool = false) -> String {
            let fill = String(repeating: " ", count: max(0, width - s.count))
            return left ? s + fill : fill + s
        }
        /// A number of milliseconds in a fixed-width column, without the unit.
        func num(_ v: Double?, _ width: Int = 7) -> String {
            guard let v else { return column("-", width) }
            let w = ByteBuffer(capacity: 32)
            JSONWriter.appendNumber(v, decimals: 1, to: w)
            let text = w.text.contains(".") ? w.text : w.text + ".0"
            return column(text, width)
        }
        func pair(_ p: Report.TimeBreakdown.Percentiles?) -> String { "\(num(p?.p50)) \(num(p?.p90))" }
        func list(_ title: String, _ items: Report.Lines, extra: String = "") {
            line("\(title): \(items.count)\(extra)")
            // A long list: where they come from first, then examples.
            if items.count > maxLines {
                let hosts = items.hosts
                let shown = hosts.prefix(5).map { "\($0.host) \($0.count)" }.joined(separator: ", ")
                line("  by host: \(shown)\(hosts.count > 5 ? ", … (\(hosts.count) hosts)" : "")")
            }
            for l in items.prefix(maxLines) {
                let note = l.note.isEmpty ? "" : "  (\(l.note))"
                line("  \(l.time.iso8601(fractionDigits: 3))  \(l.method) \(cut(l.url)) → \(l.status), \(bytes(l.bytes))\(note)")
            }
            if items.count > maxLines { line("  … \(items.count - maxLines) more") }
        }
        /// "1 connection", "2 connections".
        func plural(_ n: Int, _ noun: String) -> String { "\(n) \(noun)\(n == 1 ? "" : "s")" }
        line("== \(r.capture)")
        if r.interrupted { line("Interrupted: this report covers only the packets read before the signal.") }
        let o = r.overview
        if let start = o.start, let duration = o.durationMilliseconds {
            let seconds = ByteBuffer(capacity: 32)
            JSONWriter.appendNumber(duration / 1000, decimals: 1, to: seconds)
            var text = "Capture: \(start.iso8601(fractionDigits: 3)), \(seconds.text) s; "
                + plural(o.devices, "device") + ", " + plural(o.hosts, "host")
            if !o.protocols.isEmpty { text += "; " + o.protocols.map { "\($0.count) \($0.name)" }.joined(separator: ", ") }
            var hidden: [String] = []
            if o.encryptedTLS > 0 { hidden.append(plural(o.encryptedTLS, "TLS connection")) }
            if o.encryptedQUIC > 0 { hidden.append(plural(o.encryptedQUIC, "QUIC connection")) }
            if !hidden.isEmpty { text += "; encrypted, requests not seen: " + hidden.joined(separator: ", ") }
            line(text)
        }
        line("Traffic: \(r.traffic.requests) requests, \(r.traffic.responses) responses, \(bytes(r.traffic.wireBytes)) on the wire, \(bytes(r.traffic.decodedBytes)) of decoded bodies")
        let perConn = (r.requestsPerConnection * 10).rounded() / 10
        line("Connections: \(r.connections), \(perConn) requests per connection (max \(r.maxRequestsPerConnection)), \(r.reusedConnections) reused (keep-alive)")
        for h in r.hosts.prefix(maxLines) {
            line("  \(h.host): \(plural(h.connections, "connection")), \(plural(h.requests, "request"))")
        }
        if r.hosts.count > maxLines { line("  … \(r.hosts.count - maxLines) more hosts") }
        if r.devices.count > 1 {
            // Side by side, one row each, so that one phone is compared with another at a glance.
            line("Devices (\(r.devices.count)), most bytes first:")
            let shown = Array(r.devices.prefix(maxLines))
            let width = max(6, shown.map(\.client.count).max() ?? 6)
            line("  " + column("device", width, left: true) + column("wire", 9) + column("conns", 7) + column("encrypted", 11)
                 + column("requests", 10) + column("failed", 8) + column("avoidable", 11) + column("wasted", 9) + "  apps")
            for d in shown {
                let apps = d.userAgents.prefix(3).map { "\($0.agent) (\($0.requests))" }.joined(separator: ", ")
                    + (d.userAgents.count > 3 ? ", …" : "")
                line("  " + column(d.client, width, left: true) + column(bytes(d.wireBytes), 9) + column("\(d.connections)", 7)
                     + column("\(d.encryptedConnections)", 11) + column("\(d.requests)", 10) + column("\(d.failed)", 8)
                     + column("\(d.avoidable)", 11) + column(bytes(d.avoidableBytes), 9) + (apps.isEmpty ? "" : "  " + apps))
            }
            if r.devices.count > maxLines { line("  … \(r.devices.count - maxLines) more devices") }
        }
        // What each device's TLS and QUIC clients are, by their ClientHellos (JA4): an app's
        // library or a browser, seen in encrypted traffic too.
        let fingerprinted = r.devices.filter { !$0.fingerprints.isEmpty }
        if !fingerprinted.isEmpty {
            line("Client fingerprints (JA4 of the ClientHellos, connections):")
            let width = max(6, fingerprinted.prefix(maxLines).map(\.client.count).max() ?? 6)
            for d in fingerprinted.prefix(maxLines) {
                // The commonest one (a JA4 is 36 characters: one fits 80 columns with the device).
                let first = d.fingerprints[0]
                line("  " + column(d.client, width, left: true) + "  \(first.ja4) (\(first.connections))"
                     + (d.fingerprints.count > 1 ? ", \(d.fingerprints.count - 1) more" : ""))
            }
            if fingerprinted.count > maxLines { line("  … \(fingerprinted.count - maxLines) more devices") }
        }
        if !r.shortConnectionHosts.isEmpty {
            line("Hosts with many one-request connections (keep-alive would save a handshake each):")
            for h in r.shortConnectionHosts { line("  \(h.host): \(h.singleRequestConnections) of \(h.connections) connections carried one request") }
        }
        line()
        let t = r.time
        if let span = t.spanMilliseconds, let first = t.first, let last = t.last {
            line("Where the time goes (all in ms; server = TTFB minus the connection's round trip, the network's share):")
            line("  span \(num(span, 0)) ms from the first request \(first.iso8601(fractionDigits: 3)) to the last response byte \(last.iso8601(fractionDigits: 3))")
            // Requests outside any browser page (an app's, curl's) are no page: they are said in a
            // line of their own, not drawn with a span across hosts and minutes as if they were one.
            let documents = t.longestPages.filter(\.document)
            let outside = t.longestPages.filter { !$0.document }
            let documentCount = t.pageCount - outside.count
            if documentCount > 0 {
                line("Pages as the HAR groups them: \(documentCount)\(documentCount > documents.count ? ", the \(documents.count) longest" : "")"
                     + " (span = first request to last response byte)")
                line("     span  requests       wire  page")
                for p in documents {
                    let size = bytes(p.wireBytes)
                    let when = narrow ? "" : "  \(p.first.iso8601(fractionDigits: 3))"
                    line("  \(num(p.spanMilliseconds))  \(column(String(p.requests), 8))  \(column(size, 9))  \(cut(p.title))\(when)")
                }
            }
            for p in outside {
                line("Requests outside any browser page: \(p.requests), \(bytes(p.wireBytes)) on the wire (no page: not drawn as one)")
            }
            if narrow {
                // 80 columns: the connect and receive phases give way (the JSON has them all).
                line("  host                     requests      RTT    TTFB p50/p90  server p50/p90")
                for h in t.hosts.prefix(maxLines) {
                    line("  \(column(cut(h.host, 24), 24, left: true)) \(column(String(h.requests), 8))  \(num(h.roundTrip))  \(pair(h.ttfb))  \(pair(h.server))")
                }
            } else {
                line("  host                              requests      RTT   connect p50/p90      TTFB p50/p90    server p50/p90   receive p50/p90")
                for h in t.hosts.prefix(maxLines) {
                    line("  \(column(cut(h.host, 32), 32, left: true)) \(column(String(h.requests), 10))  \(num(h.roundTrip))   \(pair(h.connect))   \(pair(h.ttfb))   \(pair(h.server))   \(pair(h.receive))")
                }
            }
            if t.hosts.count > maxLines { line("  … \(t.hosts.count - maxLines) more hosts") }
            line("Slowest by server time:")
            line("   server     TTFB      RTT")
            for s in t.slowest.prefix(maxLines) {
                line("  \(num(s.server)) \(num(s.ttfb)) \(num(s.roundTrip))  \(s.line.method) \(cut(s.line.url)) → \(s.line.status)")
            }
            line(t.largest.isEmpty ? "Largest responses: none with a body" : "Largest responses:")
            for l in t.largest.prefix(maxLines) {
                line("  \(bytes(l.bytes))  \(l.method) \(cut(l.url)) → \(l.status)\(l.note.isEmpty ? "" : " (\(l.note))")")
            }
            line("Redirect chains: \(t.redirectChainCount)")
            for c in t.redirectChains.prefix(maxLines) {
                var text = "  " + c.steps.map { "\(cut($0.url, 60)) → \($0.status)" }.joined(separator: " → ")
                text += c.complete ? ", \(c.steps.count) requests, \(num(c.milliseconds, 0)) ms"
                                   : " → \(cut(c.finalURL, 60)) (not seen: another host, HTTPS without keys, or not captured)"
                line(text)
            }
            if t.redirectChainCount > maxLines { line("  … \(t.redirectChainCount - min(maxLines, t.redirectChains.count)) more") }
            line()
        }
        list("Avoidable requests (a stored response was still fresh)", r.opportunities.avoidable, extra: r.opportunities.avoidable.isEmpty ? "" : ", \(bytes(r.opportunities.avoidableBytes)) wasted on the wire")
        list("Revalidations answered 304", r.opportunities.notModified, extra: t.revalidations == 0 ? ""
             : ", \(num(t.revalidationMilliseconds, 0)) ms of request time and \(bytes(t.revalidationWireBytes)) of headers (each a round trip a longer freshness lifetime would save)")
        list("Re-downloaded unchanged (200 with the same validator)", r.opportunities.unchangedRedownloads)
        list("Fresh by heuristic only (no max-age or Expires)", r.opportunities.heuristicOnly)
        list("Static assets without a freshness lifetime", r.opportunities.staticWithoutLifetime)
        list("Static assets without a validator (ETag, Last-Modified)", r.opportunities.staticWithoutValidator)
        list("Text responses sent uncompressed to a client that offered a coding (≥ 1 kB)", r.opportunities.uncompressedText, extra: r.opportunities.uncompressedText.isEmpty ? "" : ", \(bytes(r.opportunities.uncompressedTextBytes))")
        if !r.injectionSuspected.isEmpty {
            list("Contradicted by a later copy of the same bytes (injection suspected: a forged response racing the real one, or a broken middlebox)",
                 r.injectionSuspected)
        }
        line()
        line(r.errorsByHost.isEmpty ? "Errors by host: none" : "Errors by host:")
        for e in r.errorsByHost.prefix(maxLines) { line("  \(e.host): \(e.count) × \(e.status)") }
        for (title, summary) in [("TLS", r.tls), ("QUIC", r.quic)] {
            guard let tls = summary else { continue }
            line()
            let rate = Int((tls.resumptionRate * 100).rounded())
            let decryption = tls.decrypted == tls.connections ? "all decrypted"
                : tls.decrypted == 0 ? "handshakes only: not decrypted" : "\(tls.decrypted) decrypted"
            line("\(title): \(tls.connections) connection\(tls.connections == 1 ? "" : "s") (\(decryption)), \(tls.resumed) resumed (\(rate)%)"
                 + (title == "QUIC" ? ", \(bytes(tls.bytesFromClient + tls.bytesFromServer)) on the wire" : ""))
            line("  versions: " + tls.versions.map { "\($0.version) \($0.count)" }.joined(separator: ", "))
            line("  handshake time: median \(ms(tls.handshakeP50)), 90th percentile \(ms(tls.handshakeP90)), max \(ms(tls.handshakeMax))")
            if !tls.ends.isEmpty {
                line("  ended: " + tls.ends.map { "\($0.end.replacingAll("_", " ")) \($0.count)" }.joined(separator: ", "))
            }
            for h in tls.hosts.prefix(maxLines) {
                var text = "  \(h.sni): \(h.connections) connection\(h.connections == 1 ? "" : "s")"
                if h.resumed > 0 { text += ", \(h.resumed) resumed" }
                if h.sequential > 0 { text += ", \(h.sequential) opened after the previous one closed (reuse would save a handshake each)" }
                line(text)
            }
            if tls.hosts.count > maxLines { line("  … \(tls.hosts.count - maxLines) more hosts") }
        }
        if let e = r.estimated {
            // Without keys: estimates from the records' sizes and times (docs/OUTPUT.md).
            line()
            line("Encrypted without keys: \(e.connections) connection\(e.connections == 1 ? "" : "s"), \(e.exchanges) exchanges estimated from records")
            // 80 columns: host 24, then 54 of figures (~: an HTTP/2 or HTTP/3 count, a lower
            // bound; -: not estimated). Times in ms.
            line("  " + column("host", 24, left: true) + column("conns", 7) + column("exchanges", 11) + column("one-exch", 10)
                 + column("bytes", 10) + column("TTFB p50", 9) + column("p90", 7))
            func number(_ v: Double?) -> String { v.map { String(ms($0).dropLast(3)) } ?? "-" }
            for h in e.hosts.prefix(maxLines) {
                line("  " + column(String(h.host.prefix(24)), 24, left: true) + column("\(h.connections)", 7)
                     + column(h.counted ? (h.atLeast ? "~" : "") + "\(h.exchanges)" : "-", 11) + column("\(h.singleExchange)", 10)
                     + column(h.responseBytes > 0 ? bytes(h.responseBytes) : "-", 10)
                     + column(number(h.ttfbP50), 9) + column(number(h.ttfbP90), 7))
            }
            if e.hosts.count > maxLines { line("  … \(e.hosts.count - maxLines) more hosts") }
        }
        if let h2 = r.http2 {
            line()
            line("HTTP/2: \(h2.connections) connection\(h2.connections == 1 ? "" : "s"), \(h2.streams) streams "
                 + "(\(Double((h2.streamsPerConnection * 10).rounded()) / 10) per connection, at most \(h2.maxStreamsPerConnection)), "
                 + "at most \(h2.peakConcurrentStreams) open at once on one connection"
                 + (h2.pushed > 0 ? ", \(h2.pushed) pushed" : "") + (h2.reset > 0 ? ", \(h2.reset) reset" : ""))
        }
        if !r.parallelHTTP1Hosts.isEmpty {
            line()
            line("HTTP/1.x hosts with parallel connections (one HTTP/2 connection would carry them all):")
            for h in r.parallelHTTP1Hosts.prefix(maxLines) {
                line("  \(h.host): \(h.connections) connections, up to \(h.peakParallel) at once, \(h.requests) requests")
            }
            if r.parallelHTTP1Hosts.count > maxLines { line("  … \(r.parallelHTTP1Hosts.count - maxLines) more hosts") }
        }
        return out
    }

    /// A URL (or host) cut to `width` characters with "…" in the middle, keeping both ends.
    static func cut(_ s: String, _ width: Int = 100) -> String {
        guard s.count > width else { return s }
        let head = (width - 1) * 2 / 3
        return String(s.prefix(head)) + "…" + String(s.suffix(width - 1 - head))
    }

    public static func json(_ reports: [Report]) -> [UInt8] {
        let w = JSONWriter(indent: 2)
        w.beginArray()
        for r in reports {
            w.beginObject()
            w.string("capture", r.capture)
            if r.interrupted { w.bool("interrupted", true) }
            w.key("overview"); w.beginObject()
            w.optionalString("start", r.overview.start?.iso8601(fractionDigits: 6))
            w.optionalNumber("durationMs", r.overview.durationMilliseconds)
            w.int("devices", r.overview.devices)
            w.int("hosts", r.overview.hosts)
            w.key("protocols"); w.beginObject(); for p in r.overview.protocols { w.key(text: p.name); w.int(p.count) }; w.endObject()
            w.int("encryptedTLSConnections", r.overview.encryptedTLS)
            w.int("encryptedQUICConnections", r.overview.encryptedQUIC)
            w.endObject()
            w.int("requests", r.traffic.requests)
            w.int("responses", r.traffic.responses)
            w.int("wireBytes", r.traffic.wireBytes)
            w.int("decodedBytes", r.traffic.decodedBytes)
            w.int("connections", r.connections)
            w.number("requestsPerConnection", r.requestsPerConnection)
            w.int("maxRequestsPerConnection", r.maxRequestsPerConnection)
            w.int("reusedConnections", r.reusedConnections)
            w.key("hosts"); w.beginArray()
            for h in r.hosts {
                w.beginObject(); w.string("host", h.host); w.int("connections", h.connections); w.int("requests", h.requests)
                w.int("singleRequestConnections", h.singleRequestConnections); w.endObject()
            }
            w.endArray()
            w.key("shortConnectionHosts"); w.beginArray(); for h in r.shortConnectionHosts { w.string(h.host) }; w.endArray()
            w.key("devices"); w.beginArray()
            for d in r.devices {
                w.beginObject()
                w.string("client", d.client); w.optionalString("mac", d.mac); w.optionalString("name", d.name); w.int("connections", d.connections); w.int("encryptedConnections", d.encryptedConnections)
                w.int("wireBytes", d.wireBytes); w.int("requests", d.requests)
                w.int("avoidable", d.avoidable); w.int("avoidableBytes", d.avoidableBytes); w.int("failed", d.failed)
                w.key("userAgents"); w.beginArray()
                for a in d.userAgents { w.beginObject(); w.string("userAgent", a.agent); w.int("requests", a.requests); w.endObject() }
                w.endArray()
                w.key("ja4"); w.beginArray()
                for f in d.fingerprints { w.beginObject(); w.string("ja4", f.ja4); w.int("connections", f.connections); w.endObject() }
                w.endArray()
                w.endObject()
            }
            w.endArray()
            func lines(_ name: String, _ items: Report.Lines) {
                w.key(text: name + "Count"); w.int(items.count)
                w.key(text: name + "ByHost"); w.beginObject(); for h in items.hosts { w.key(text: h.host); w.int(h.count) }; w.endObject()
                w.key(text: name); w.beginArray()
                for l in items.lines {
                    w.beginObject()
                    w.string("time", l.time.iso8601(fractionDigits: 6)); w.string("method", l.method); w.string("url", l.url)
                    w.int("status", l.status); w.int("bytes", l.bytes)
                    if !l.note.isEmpty { w.string("note", l.note) }
                    w.endObject()
                }
                w.endArray()
            }
            lines("avoidable", r.opportunities.avoidable)
            w.int("avoidableBytes", r.opportunities.avoidableBytes)
            lines("notModified", r.opportunities.notModified)
            lines("unchangedRedownloads", r.opportunities.unchangedRedownloads)
            lines("heuristicOnly", r.opportunities.heuristicOnly)
            lines("staticWithoutLifetime", r.opportunities.staticWithoutLifetime)
            lines("staticWithoutValidator", r.opportunities.staticWithoutValidator)
            lines("uncompressedText", r.opportunities.uncompressedText)
            lines("injectionSuspected", r.injectionSuspected)
            w.int("uncompressedTextBytes", r.opportunities.uncompressedTextBytes)
            w.key("slowestByWait"); w.beginArray()
            for (l, wait) in r.slowestByWait {
                w.beginObject(); w.string("url", l.url); w.string("method", l.method); w.int("status", l.status); w.number("wait", wait); w.endObject()
            }
            w.endArray()
            writeTime(r.time, to: w)
            if let e = r.estimated {
                w.key("estimated"); w.beginObject()
                w.int("connections", e.connections); w.int("exchanges", e.exchanges)
                w.key("hosts"); w.beginArray()
                for h in e.hosts {
                    w.beginObject(); w.string("host", h.host); w.int("connections", h.connections)
                    w.int("singleExchangeConnections", h.singleExchange)
                    w.key("exchanges"); if h.counted { w.int(h.exchanges) } else { w.null() }
                    w.bool("exchangesAtLeast", h.atLeast); w.int("responseBytes", h.responseBytes)
                    w.optionalNumber("ttfbP50", h.ttfbP50); w.optionalNumber("ttfbP90", h.ttfbP90)
                    w.endObject()
                }
                w.endArray()
                w.endObject()
            }
            for (key, summary) in [("tls", r.tls), ("quic", r.quic)] {
                guard let tls = summary else { continue }
                w.key(text: key); w.beginObject()
                w.int("connections", tls.connections)
                w.int("decrypted", tls.decrypted)
                w.int("resumed", tls.resumed)
                w.key("versions"); w.beginObject(); for v in tls.versions { w.key(text: v.version); w.int(v.count) }; w.endObject()
                w.optionalNumber("handshakeP50", tls.handshakeP50)
                w.optionalNumber("handshakeP90", tls.handshakeP90)
                w.optionalNumber("handshakeMax", tls.handshakeMax)
                if key == "quic" {
                    w.int("bytesFromClient", tls.bytesFromClient); w.int("bytesFromServer", tls.bytesFromServer)
                    w.key("ends"); w.beginObject(); for e in tls.ends { w.key(text: e.end); w.int(e.count) }; w.endObject()
                }
                w.key("hosts"); w.beginArray()
                for h in tls.hosts {
                    w.beginObject(); w.string("sni", h.sni); w.int("connections", h.connections); w.int("resumed", h.resumed)
                    w.int("sequentialConnections", h.sequential); w.endObject()
                }
                w.endArray()
                w.endObject()
            }
            if let h2 = r.http2 {
                w.key("http2"); w.beginObject()
                w.int("connections", h2.connections)
                w.int("streams", h2.streams)
                w.number("streamsPerConnection", h2.streamsPerConnection)
                w.int("maxStreamsPerConnection", h2.maxStreamsPerConnection)
                w.int("peakConcurrentStreams", h2.peakConcurrentStreams)
                w.int("pushed", h2.pushed)
                w.int("reset", h2.reset)
                w.endObject()
            }
            w.key("parallelHTTP1Hosts"); w.beginArray()
            for h in r.parallelHTTP1Hosts {
                w.beginObject(); w.string("host", h.host); w.int("connections", h.connections); w.int("peakParallel", h.peakParallel)
                w.int("requests", h.requests); w.endObject()
            }
            w.endArray()
            w.key("errorsByHost"); w.beginArray()
            for e in r.errorsByHost {
                w.beginObject(); w.string("host", e.host); w.int("status", e.status); w.int("count", e.count); w.endObject()
            }
            w.endArray()
            w.endObject()
        }
        w.endArray()
        w.append(0x0A)
        return w.array
    }

    /// `time`: where the time goes (milliseconds throughout).
    static func writeTime(_ t: Report.TimeBreakdown, to w: JSONWriter) {
        func percentiles(_ name: StaticString, _ p: Report.TimeBreakdown.Percentiles?) {
            w.key(name)
            guard let p else { w.null(); return }
            w.beginObject(); w.number("p50", p.p50); w.number("p90", p.p90); w.endObject()
        }
        w.key("time"); w.beginObject()
        w.optionalString("first", t.first?.iso8601(fractionDigits: 6))
        w.optionalString("last", t.last?.iso8601(fractionDigits: 6))
        w.optionalNumber("spanMs", t.spanMilliseconds)
        w.key("hosts"); w.beginArray()
        for h in t.hosts {
            w.beginObject()
            w.string("host", h.host); w.int("requests", h.requests); w.optionalNumber("roundTripMs", h.roundTrip)
            percentiles("connectMs", h.connect); percentiles("ttfbMs", h.ttfb); percentiles("serverMs", h.server)
            percentiles("receiveMs", h.receive)
            w.endObject()
        }
        w.endArray()
        w.key("slowestByServerTime"); w.beginArray()
        for s in t.slowest {
            w.beginObject(); w.string("method", s.line.method); w.string("url", s.line.url); w.int("status", s.line.status)
            w.number("ttfbMs", s.ttfb); w.optionalNumber("roundTripMs", s.roundTrip); w.optionalNumber("serverMs", s.server); w.endObject()
        }
        w.endArray()
        w.key("largest"); w.beginArray()
        for l in t.largest {
            w.beginObject(); w.string("method", l.method); w.string("url", l.url); w.int("status", l.status); w.int("bytes", l.bytes)
            w.string("type", l.note); w.endObject()
        }
        w.endArray()
        w.int("redirectChainCount", t.redirectChainCount)
        w.int("pageCount", t.pageCount)
        w.key("longestPages"); w.beginArray()
        for p in t.longestPages {
            w.beginObject(); w.string("title", p.title); w.bool("document", p.document); w.int("requests", p.requests)
            w.int("wireBytes", p.wireBytes); w.string("first", p.first.iso8601(fractionDigits: 6))
            w.string("last", p.last.iso8601(fractionDigits: 6)); w.number("spanMs", p.spanMilliseconds); w.endObject()
        }
        w.endArray()
        w.key("redirectChains"); w.beginArray()
        for c in t.redirectChains {
            w.beginObject()
            w.key("steps"); w.beginArray()
            for s in c.steps { w.beginObject(); w.string("url", s.url); w.int("status", s.status); w.endObject() }
            w.endArray()
            w.string("finalURL", c.finalURL); w.bool("complete", c.complete); w.number("ms", c.milliseconds)
            w.endObject()
        }
        w.endArray()
        w.key("revalidations"); w.beginObject()
        w.int("count", t.revalidations); w.number("ms", t.revalidationMilliseconds); w.int("headerBytes", t.revalidationWireBytes)
        w.endObject()
        w.endObject()
    }
}

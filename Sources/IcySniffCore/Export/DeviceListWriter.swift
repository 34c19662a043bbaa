/// `--devices`: one device a row (`DeviceTable.summaries`), in the run's format — a table for a
/// terminal, TSV, CSV, or NDJSON (docs/OUTPUT.md, "Devices"; the NDJSON is the contract: `id`,
/// `mac`, `names` with their `source`, `addresses` with `first` and `last`, `os_hint`,
/// `connections`, `requests`, `bytes`).
public enum DeviceListWriter {
    public static let columns = ["id", "mac", "name", "names", "os_hint", "addresses", "connections", "requests", "bytes", "encrypted_share"]

    public static func write(_ devices: [DeviceSummary], format: OutputFormat, to out: OutputFile) {
        switch format {
        case .ndjson:
            for d in devices {
                let w = JSONWriter()
                write(d, to: w)
                w.append(0x0A)
                out.write(w.buffer)
            }
        case .table:
            let rows = [columns] + devices.map(cells)
            var widths = columns.map { _ in 0 }
            for r in rows { for (i, c) in r.enumerated() { widths[i] = max(widths[i], c.count) } }
            // The addresses column can be long: it is cut to 60 characters (the TSV has them all).
            let at = columns.firstIndex(of: "addresses")!
            widths[at] = min(widths[at], 60)
            for r in rows {
                let line = r.enumerated().map { i, c in
                    let text = c.count > widths[i] ? String(c.prefix(widths[i] - 1)) + "…" : c
                    return text + String(repeating: " ", count: max(0, widths[i] - text.count))
                }.joined(separator: "  ")
                out.write(String(line.reversed().drop(while: { $0 == " " }).reversed()) + "\n")
            }
        default:
            let tsv = format != .csv
            for r in [columns] + devices.map(cells) {
                out.write(r.map { TableWriter.escaped($0, tsv: tsv) }.joined(separator: tsv ? "\t" : ",") + "\n")
            }
        }
    }

    static func cells(_ d: DeviceSummary) -> [String] {
        let share = d.bytes == 0 ? "" : String(Int((Double(d.encryptedBytes) / Double(d.bytes) * 100).rounded())) + "%"
        return [d.id, d.mac?.description ?? "-", d.name ?? "-", d.names.map { "\($0.name) (\($0.source))" }.joined(separator: ", "),
                d.osHint ?? "", d.addresses.map { $0.address.description }.joined(separator: ", "),
                String(d.connections), String(d.requests), String(d.bytes), share]
    }

    static func write(_ d: DeviceSummary, to w: JSONWriter) {
        w.beginObject()
        w.string("id", d.id)
        w.optionalString("mac", d.mac?.description)
        w.optionalString("name", d.name)
        w.key("names"); w.beginArray()
        for n in d.names { w.beginObject(); w.string("name", n.name); w.string("source", n.source); w.endObject() }
        w.endArray()
        w.key("addresses"); w.beginArray()
        for a in d.addresses {
            w.beginObject()
            w.string("address", a.address.description)
            w.optionalString("first", a.first?.iso8601(fractionDigits: 6))
            w.optionalString("last", a.last?.iso8601(fractionDigits: 6))
            w.endObject()
        }
        w.endArray()
        w.optionalString("os_hint", d.osHint)
        w.optionalString("vendor_class", d.vendorClass)
        w.optionalString("model", d.model)
        w.key("user_agents"); w.beginArray(); for a in d.userAgents { w.string(a) }; w.endArray()
        w.key("ja4"); w.beginArray(); for j in d.ja4s { w.string(j) }; w.endArray()
        w.int("connections", d.connections)
        w.int("requests", d.requests)
        w.int("bytes", d.bytes)
        w.int("encrypted_bytes", d.encryptedBytes)
        w.string("first_seen", d.firstSeen.iso8601(fractionDigits: 6))
        w.endObject()
    }
}

/// The `-V` heads of a WebSocket: its messages, one line each, and a summary line.
extension TableWriter {
    /// A WebSocket's messages for `-V`: one line each (time, direction, kind, size, and the
    /// start of a text message), then its totals and close.
    static func webSocketLines(_ ws: WebSocketLog) -> String {
        var text = "\n"
        for m in ws.messages {
            var line = "\(m.time.iso8601(fractionDigits: 3))  \(m.fromClient ? "→ send   " : "← receive")  "
                + "\(m.opcode == 1 ? "text  " : "binary")  \(m.size) bytes"
            if m.compressed { line += " (\(m.wireSize) compressed)" }
            if let problem = m.problem { line += " [\(problem.rawValue)]" }
            if m.opcode == 1, let data = m.data, !data.isEmpty {
                var preview = String(decoding: data.prefix(120), as: UTF8.self)
                if data.count > 120 || m.truncated { preview += "…" }
                line += "  " + preview
            }
            text += printable(line) + "\n"
        }
        if ws.dropped > 0 { text += "(\(ws.dropped) more messages counted, not listed)\n" }
        text += "[websocket: \(ws.sent.messages) sent (\(ws.sent.bytes) bytes), \(ws.received.messages) received (\(ws.received.bytes) bytes)"
        if let by = ws.closedByClient {
            text += ", closed by the \(by ? "client" : "server")"
            if let code = ws.closeCode { text += " \(code)" }
            if let reason = ws.closeReason, !reason.isEmpty { text += " " + printable(reason) }
        }
        if let e = ws.extensions { text += "; " + printable(e) }
        return text + "]\n"
    }
}

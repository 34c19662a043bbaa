#if canImport(Glibc)
import Glibc
#endif

/// The terminal table's layout (how wide each column is on a line of the terminal's width) and
/// its text (display cells of wide and combining characters, control characters made harmless,
/// text shortened to a width with an ellipsis). Pure functions of their arguments.
extension TableWriter {
    /// What each flexible column (nil width) gets of a line of `width` cells once the others and
    /// the spaces between columns are placed; nil when there is none.
    static func sharedWidth(_ widths: [Int?], of width: Int) -> Int? {
        let shares = widths.filter { $0 == nil }.count
        guard shares > 0 else { return nil }
        return (width - widths.compactMap { $0 }.reduce(0, +) - (widths.count - 1)) / shares
    }

    /// The table's width in display cells: the terminal's, else `COLUMNS` (as `ls` and `ps` read
    /// it when not writing to a terminal), else 160.
    public static func tableWidth(terminal: Bool) -> Int {
        var ws = winsize()
        if terminal && ioctl(1, UInt(TIOCGWINSZ), &ws) == 0 && ws.ws_col >= 40 { return Int(ws.ws_col) }
        if let text = getenv("COLUMNS").map({ String(cString: $0) }), let n = Int(text), n >= 40 { return min(n, 1000) }
        return 160
    }

    /// The URL column's share of a line: three tenths of it, at least 24 cells, at most 60.
    static func urlTarget(_ width: Int) -> Int { min(60, max(24, width * 3 / 10)) }

    /// The table's columns and their widths for a line of `width` cells. With the default
    /// columns (`adaptive`), the least needed give way to the URL until it has its share: the
    /// client and protocol go, flags narrow, the content type goes, the cache verdict narrows,
    /// the flags go, and the time drops its milliseconds. Columns named with `--fields` all stay.
    static func tableLayout(_ fields: [Field], width: Int, adaptive: Bool) -> [(field: Field, width: Int?)] {
        var layout: [(field: Field, width: Int?)] = fields.map { ($0, baseWidth($0)) }
        guard adaptive else { return layout }
        let steps: [(Field, Int?)] = [(.proto, nil), (.client, nil), (.flags, 12), (.contentType, nil), (.cache, 12), (.flags, nil), (.time, 8)]
        for (field, narrowed) in steps where (sharedWidth(layout.map(\.width), of: width) ?? .max) < urlTarget(width) {
            guard let i = layout.firstIndex(where: { $0.field == field }) else { continue }
            if let narrowed { layout[i].width = narrowed } else { layout.remove(at: i) }
        }
        return layout
    }

    static func baseWidth(_ f: Field) -> Int? {
        switch f {
        case .time: return 12
        case .client: return 16
        case .server: return 21
        case .method: return 7
        case .status: return 6
        case .contentType: return 16
        case .size, .encodedSize, .requestSize: return 9
        case .duration, .connect, .send, .wait, .receive, .ssl: return 8
        case .tlsVersion: return 11
        case .cache: return 16
        case .depth: return 5
        case .connection: return 6
        case .version: return 8
        case .proto: return 8
        case .stream: return 6
        case .wsMessages, .wsBytes: return 9
        case .flags: return 24
        default: return nil
        }
    }

    /// Display cells of a scalar on a terminal (after `printable`): 0 for combining marks and
    /// zero-width characters, 2 for East Asian wide and fullwidth characters and emoji (the
    /// ranges of Markus Kuhn's wcwidth, Unicode 15's emoji blocks), 1 otherwise.
    static func cells(_ c: Unicode.Scalar) -> Int {
        let v = c.value
        if v < 0x300 { return 1 }
        switch c.properties.generalCategory {
        case .nonspacingMark, .enclosingMark, .format: return 0
        default: break
        }
        if (0x1160...0x11FF).contains(v) || v == 0x200B { return 0 }
        return wideRanges.contains { $0.contains(v) } ? 2 : 1
    }

    /// East Asian wide and fullwidth characters, and emoji: two cells.
    static let wideRanges: [ClosedRange<UInt32>] = [
        0x1100...0x115F, 0x2329...0x232A, 0x2E80...0x303E, 0x3041...0x33FF, 0x3400...0x4DBF, 0x4E00...0x9FFF,
        0xA000...0xA4CF, 0xAC00...0xD7A3, 0xF900...0xFAFF, 0xFE10...0xFE19, 0xFE30...0xFE6F, 0xFF00...0xFF60,
        0xFFE0...0xFFE6, 0x1F300...0x1F64F, 0x1F900...0x1F9FF, 0x20000...0x2FFFD, 0x30000...0x3FFFD,
    ]

    static func cells(_ s: String) -> Int { s.unicodeScalars.reduce(0) { $0 + cells($1) } }

    /// Text for a terminal: control characters (C0, DEL, C1) as "?", so bytes from the wire
    /// cannot move the cursor or send escape sequences.
    static func printable(_ s: String) -> String {
        String(String.UnicodeScalarView(s.unicodeScalars.map { c in
            c.value < 0x20 || (0x7F...0x9F).contains(c.value) ? "?" : c
        }))
    }

    static func fit(_ s: String, _ width: Int, keepEnd: Bool) -> String {
        let scalars = Array(Self.printable(s).unicodeScalars)
        let total = scalars.reduce(0) { $0 + Self.cells($1) }
        if total <= width { return String(String.UnicodeScalarView(scalars)) }
        if width <= 1 { return width == 1 ? "…" : "" }
        /// The longest run from the start (or from the end) that fits `room` cells.
        func take(_ room: Int, fromEnd: Bool) -> [Unicode.Scalar] {
            var used = 0, out: [Unicode.Scalar] = []
            for c in (fromEnd ? Array(scalars.reversed()) : scalars) {
                let w = Self.cells(c)
                if used + w > room { break }
                used += w
                out.append(c)
            }
            return fromEnd ? out.reversed() : out
        }
        // A URL keeps its end — the file a row is about, where rows of one page differ — and of
        // its start a third of the width: the host with its slash when that fits
        // ("upload.wikimedia.org/…/Wikipedia-logo.png"), else the host's first letters.
        // A scheme ("https://") is not counted in that third, and the host's slash is the first
        // one after it (an https URL kept "https:/" and lost its host).
        let afterScheme = !keepEnd ? 0 : (0..<min(12, max(0, scalars.count - 2))).first {
            scalars[$0] == ":" && scalars[$0 + 1] == "/" && scalars[$0 + 2] == "/"
        }.map { $0 + 3 } ?? 0
        let head = keepEnd ? min(width - 1, afterScheme + max(1, (width - 1) / 3)) : width - 1
        var out = take(head, fromEnd: false)
        if keepEnd, let slash = scalars[afterScheme...].firstIndex(of: "/"), slash + 1 <= out.count, slash > afterScheme {
            out = Array(scalars[...slash])
        }
        out.append("…")
        if keepEnd { out += take(width - Self.cells(String(String.UnicodeScalarView(out))), fromEnd: true) }
        return String(String.UnicodeScalarView(out))
    }
}

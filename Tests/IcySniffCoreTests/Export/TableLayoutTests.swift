import Testing
@testable import IcySniffCore

/// The terminal table at any width (issue 19): with the default columns the least needed give
/// way to the URL, lines never pass the width, and widths are counted in display cells.
@Suite struct TableLayoutTests {
    func total(_ layout: [(field: Field, width: Int?)], url: Int) -> Int {
        layout.map { $0.width ?? url }.reduce(0, +) + layout.count - 1
    }

    @Test(arguments: [80, 100, 120, 160, 200])
    func theURLGetsItsShareAndTheLineFits(width: Int) {
        let layout = TableWriter.tableLayout(Field.defaultColumns, width: width, adaptive: true)
        let fixed = layout.compactMap(\.width).reduce(0, +) + layout.count - 1
        let url = width - fixed
        #expect(url >= TableWriter.urlTarget(width), "URL \(url) cells at \(width)")
        #expect(layout.contains { $0.field == .url } && layout.contains { $0.field == .status } && layout.contains { $0.field == .cache })
        #expect(total(layout, url: url) <= width)
    }

    @Test func whatGivesWayAndInWhichOrder() {
        let names = { (w: Int) in TableWriter.tableLayout(Field.defaultColumns, width: w, adaptive: true).map(\.field) }
        #expect(names(200) == Field.defaultColumns, "everything fits at 200")
        #expect(!names(120).contains(.client) && !names(120).contains(.proto) && !names(120).contains(.contentType))
        #expect(names(120).contains(.flags))
        // The protocol gives way before the client: on a hotspot who sent a request matters more.
        #expect(names(180).contains(.client) && !names(180).contains(.proto))
        #expect(names(80) == [.time, .method, .url, .status, .size, .duration, .cache])
        // Columns asked for by name all stay, whatever the width.
        let asked: [Field] = [.time, .client, .server, .url, .flags]
        #expect(TableWriter.tableLayout(asked, width: 80, adaptive: false).map(\.field) == asked)
    }

    @Test func displayCells() {
        #expect(TableWriter.cells("abc") == 3)
        #expect(TableWriter.cells("日本語") == 6)
        #expect(TableWriter.cells("e\u{301}") == 1, "a combining accent takes no cell")
        #expect(TableWriter.cells("🎉") == 2)
        #expect(TableWriter.cells("ｈｉ") == 4, "fullwidth forms")
    }

    /// Shortened URLs of one page still differ (issue 30: at 80 columns six Wikipedia rows all
    /// read `upload.wikimedi….svg.png`): the end of the path is kept, and the host with its slash
    /// when it fits.
    @Test func shortenedURLsKeepTheirEnds() throws {
        let names = ["Wikipedia-logo.png", "Wiktionary-logo-en.svg.png", "Wikisource-logo.svg.png"]
        let transactions = names.flatMap { name in
            Transcript("""
            >>>
            GET /wikipedia/commons/thumb/a/ab/\(name)/35px-\(name) HTTP/1.1
            Host: upload.wikimedia.org

            <<<
            HTTP/1.1 200 OK
            Content-Length: 0

            """).run()
        }
        let out = OutputFile(memory: true)
        let writer = TableWriter(format: .table, output: out, options: ExportOptions(), width: 80)
        for t in transactions { writer.consume(t) }
        writer.finish()
        let rows = String(decoding: out.takeBytes(), as: UTF8.self).split(separator: "\n").dropFirst()
        #expect(rows.count == 3)
        let urls = rows.compactMap { $0.split(separator: " ").first { $0.contains("…") } }
        #expect(Set(urls).count == 3, "\(urls)")
        for (url, name) in zip(urls, names) { #expect(url.hasSuffix(String(name.suffix(8))), "\(url)") }
    }

    @Test func wideCharactersAreCutByCells() {
        let transactions = Transcript("""
        >>>
        GET /日本語/ファイル名の長いパスの例/とても長い名前のファイル.html HTTP/1.1
        Host: 例え.テスト

        <<<
        HTTP/1.1 200 OK
        Content-Length: 0

        """).run()
        for width in [80, 120] {
            let out = OutputFile(memory: true)
            let writer = TableWriter(format: .table, output: out, options: ExportOptions(), width: width)
            for t in transactions { writer.consume(t) }
            writer.finish()
            let lines = String(decoding: out.takeBytes(), as: UTF8.self).split(separator: "\n")
            #expect(lines.count == 2)
            for line in lines { #expect(TableWriter.cells(String(line)) <= width, "\(width): \(line)") }
            // The URL was shortened in the middle: both ends kept, by cells.
            #expect(lines.last?.contains("…") == true)
            #expect(lines.last?.contains(".html") == true)
        }
    }
}

import Foundation
import Testing

/// The table in a real terminal (issue 19): tmux at 80, 120 and 200 columns, read back with
/// `capture-pane`. Every row fits on one line (no wrapping), the URL keeps its share, and the
/// columns that give way at 80 are back at 200. Without a terminal, `COLUMNS` sets the width.
@Suite struct TerminalTableTests {
    static var hasTmux: Bool { Unchecked.note(FileManager.default.isExecutableFile(atPath: "/usr/bin/tmux"), "the table on a real terminal (tmux)") }

    @Test(.enabled(if: TerminalTableTests.hasTmux || ProcessInfo.processInfo.environment["CI"] != nil,
                   "tmux is not installed (scripts/install-deps installs it)"),
          .hangLimit)
    func rowsFitTheTerminal() throws {
        let capture = CLI.capture("wikipedia.pcap")
        let transactions = try CLI.run(["-r", capture, "--format", "ndjson", "-q"]).text.split(separator: "\n").count
        try #require(transactions == 15)
        for width in [80, 120, 200] {
            let socket = "icy-table-\(getpid())-\(width)"
            defer { _ = try? CLI.run(["-L", socket, "kill-server"], executable: "/usr/bin/tmux") }
            let command = "env -u COLUMNS TERM=xterm NO_COLOR=1 '\(CLI.binary)' -r '\(capture)'; sleep 60"
            // The tmux server outlives its client: it must not inherit the descriptor through
            // which Foundation's Process learns that its child ended, or starting it would wait
            // for the server to end.
            let start = try CLI.run(["python3", "-c", "import os, sys; os.closerange(3, 65536); os.execvp(sys.argv[1], sys.argv[1:])",
                                     "tmux", "-L", socket, "-f", "/dev/null", "new-session", "-d", "-x", "\(width)", "-y", "50", command],
                                    executable: "/usr/bin/env")
            try #require(start.status == 0, "\(start.stderr)")
            var screen = ""
            for _ in 0..<200 {
                screen = try CLI.run(["-L", socket, "capture-pane", "-p", "-J"], executable: "/usr/bin/tmux").text
                if screen.contains("HTTP transactions") { break }
                Thread.sleep(forTimeInterval: 0.1)
            }
            // -J joins wrapped lines: a row that wrapped comes back longer than the pane.
            let lines = screen.split(separator: "\n").map(String.init)
            let rows = lines.filter { $0.range(of: #"^\d\d:\d\d:\d\d"#, options: .regularExpression) != nil }
            #expect(rows.count == 15, "\(width): \(screen)")
            #expect(lines.allSatisfy { $0.count <= width }, "\(width): a line is wider than the terminal")
            let header = try #require(lines.first { $0.hasPrefix("TIME") }, "\(width)")
            #expect(header.contains("URL") && header.contains("STATUS") && header.contains("CACHE"), "\(width): \(header)")
            #expect(header.contains("CLIENT") == (width >= 200), "\(width): \(header)")
            #expect(rows.contains { $0.contains("www.wikipedia.org/ ") }, "\(width): a short URL is shown whole")
        }
    }

    /// The rows of encrypted connections and their estimates keep to the time column as the
    /// transactions' rows do: at 80 columns it drops its milliseconds (they wrote them, and the
    /// cell was cut: `17:13:2…`).
    @Test func encryptedRowsFitTheNarrowedTime() throws {
        for (width, pattern) in [(80, #"^\d\d:\d\d:\d\d (TLS|≈) "#), (200, #"^\d\d:\d\d:\d\d\.\d\d\d 127\.0\.0\.1 +(TLS|≈) "#)] {
            let r = try CLI.run(["-r", CLI.capture("tls-sample.pcap"), "--format", "table", "-q"], environment: ["COLUMNS": "\(width)"])
            let rows = r.text.split(separator: "\n").dropFirst()
            #expect(rows.count == 9 && rows.allSatisfy { $0.range(of: pattern, options: .regularExpression) != nil }, "\(width): \(rows)")
        }
    }

    @Test func columnsSetsTheWidthWithoutATerminal() throws {
        for width in [80, 200] {
            let r = try CLI.run(["-r", CLI.capture("wikipedia.pcap"), "--format", "table", "-q"], environment: ["COLUMNS": "\(width)"])
            #expect(r.status == 0, "\(r.stderr)")
            let lines = r.text.split(separator: "\n")
            #expect(lines.count == 16)
            #expect(lines.allSatisfy { $0.count <= width }, "\(width)")
            #expect(lines.contains { $0.count > width - 30 }, "\(width): the width is used")
        }
    }
}

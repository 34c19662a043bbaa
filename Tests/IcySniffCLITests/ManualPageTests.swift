import Foundation
import Testing

/// The installed manual (issue 30): `man icy-sniff` is the page a user opens, so it holds every
/// option of the default command, grouped as --help groups them, the examples, the exit codes and
/// the files; `icy-sniff-report(1)` has the report's options; the pages name each other. Read
/// through `man -l` of the pages scripts/install puts under DESTDIR, as a user would read them.
@Suite struct ManualPageTests {
    static var hasMan: Bool { Unchecked.note(FileManager.default.isExecutableFile(atPath: "/usr/bin/man"), "the manual pages (man-db)") }

    static func rendered(_ page: String) throws -> String {
        let r = try CLI.run(["man", "-l", page], executable: "/usr/bin/env", environment: ["MANWIDTH": "200", "MANPAGER": "cat", "PAGER": "cat"])
        #expect(r.status == 0, "\(r.stderr)")
        // man's bold and underline (overstrike) are not in the way of a search.
        return r.text.replacingOccurrences(of: ".\u{8}", with: "", options: .regularExpression)
    }

    @Test(.enabled(if: ManualPageTests.hasMan || ProcessInfo.processInfo.environment["CI"] != nil, "man is not installed"),
          .hangLimit)
    func mainPageHoldsWhatAUserRuns() throws {
        let dir = CLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let install = try CLI.run([CLI.packageRoot.appendingPathComponent("scripts/install").path, "/usr"], executable: "/usr/bin/env",
                                  environment: ["DESTDIR": dir.path, "ICY_SNIFF_BIN": CLI.binary])
        #expect(install.status == 0, "\(install.stderr)")
        let man1 = dir.appendingPathComponent("usr/share/man/man1")
        #expect(try FileManager.default.contentsOfDirectory(atPath: man1.path).sorted() == ["icy-sniff-analyze.1", "icy-sniff-diff.1", "icy-sniff-report.1", "icy-sniff.1"])
        let main = try Self.rendered(man1.appendingPathComponent("icy-sniff.1").path)

        // Every option analyze shows in --help, by its long name, from the binary's own definitions.
        let dump = try CLI.run(["--experimental-dump-help"])
        let root = try #require(try JSONSerialization.jsonObject(with: dump.stdout) as? [String: Any])
        let command = try #require(root["command"] as? [String: Any])
        let analyze = try #require((command["subcommands"] as? [[String: Any]])?.first { $0["commandName"] as? String == "analyze" })
        var longNames: [String] = []
        for argument in analyze["arguments"] as? [[String: Any]] ?? [] where argument["shouldDisplay"] as? Bool != false {
            for name in argument["names"] as? [[String: Any]] ?? [] where name["kind"] as? String == "long" {
                longNames.append("--\(name["name"] as! String)")
            }
        }
        #expect(longNames.count > 30, "\(longNames)")
        for name in longNames { #expect(main.contains(name), "man icy-sniff lacks \(name)") }
        for section in ["SYNOPSIS", "OPTIONS", "Input", "Output", "Filters", "EXIT STATUS", "EXAMPLES", "FILES", "SEE ALSO"] {
            #expect(main.contains(section), "man icy-sniff lacks \(section)")
        }
        for code in ["64", "130"] { #expect(main.range(of: "\n *\(code) +[a-z]", options: .regularExpression) != nil, "exit code \(code)") }
        #expect(main.contains("icy-sniff -r phone.pcap --har -o phone.har"), "an example, whole")
        #expect(main.contains("icy-sniff-report(1)"))
        #expect(main.contains("icy-sniff ... | head"), "the help's ellipsis survives")

        let report = try Self.rendered(man1.appendingPathComponent("icy-sniff-report.1").path)
        for name in ["--read", "--keylog", "--format", "--keep-secrets"] { #expect(report.contains(name), "report page lacks \(name)") }
        #expect(report.contains("password, ...") && report.contains("icy-sniff(1)"))
    }
}

import Foundation
import Testing

/// Shell completion (issue 19), generated from the command definitions by scripts/make-completions
/// and driven in a real bash as readline would: without typing `analyze` (the default
/// subcommand), files after -r and -o, interfaces after -i, users after -Z, formats and fields.
@Suite struct ShellCompletionTests {
    static let script = """
    source "$1"; shift
    line="$*"
    read -r -a COMP_WORDS <<< "$line"
    [[ "$line" == *" " ]] && COMP_WORDS+=("")
    COMP_CWORD=$(( ${#COMP_WORDS[@]} - 1 ))
    COMP_LINE="$line"; COMP_POINT=${#line}
    _icy-sniff_default icy-sniff "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD-1]}"
    printf '%s\\n' "${COMPREPLY[@]}"
    """

    @Test(.timeLimit(.minutes(10)))
    func bashCompletesWithoutTheSubcommand() throws {
        let dir = CLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let make = try CLI.run([CLI.packageRoot.appendingPathComponent("scripts/make-completions").path, dir.path, CLI.binary],
                               executable: "/bin/bash")
        try #require(make.status == 0, "\(make.stderr)")
        for file in ["icy-sniff.bash", "_icy-sniff", "icy-sniff.fish"] {
            #expect(FileManager.default.fileExists(atPath: dir.appendingPathComponent(file).path), "\(file)")
        }
        // -i runs `icy-sniff -D`: the binary under test comes first on the PATH.
        let path = URL(fileURLWithPath: CLI.binary).deletingLastPathComponent().path + ":" + (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin")
        func complete(_ line: String) throws -> [String] {
            let r = try CLI.run(["-c", Self.script, "complete", dir.appendingPathComponent("icy-sniff.bash").path, line],
                                executable: "/bin/bash", environment: ["PATH": path])
            #expect(r.status == 0, "\(line): \(r.stderr)")
            return r.text.split(separator: "\n").map(String.init)
        }
        #expect(try complete("icy-sniff --for").contains("--format"))
        #expect(try complete("icy-sniff --format ") == ["table", "tsv", "csv", "ndjson", "har", "heads"])
        #expect(try complete("icy-sniff -r captures/wiki") == ["captures/wikipedia.pcap"])
        #expect(try complete("icy-sniff --har -o captures/tls-s").contains("captures/tls-sample.pcap"))
        #expect(try complete("icy-sniff -Z ro").contains("root"))
        #expect(try complete("icy-sniff -i l").contains("lo"))
        #expect(try complete("icy-sniff --fields ur") == ["url"])
        #expect(try complete("icy-sniff rep") == ["report"])
        #expect(try complete("icy-sniff report --format ") == ["text", "json"])
        #expect(try complete("icy-sniff analyze --stat").contains("--stats"))
    }
}

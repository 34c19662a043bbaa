import Foundation
import Testing

/// Shell completion (issue 19), generated from the command definitions by scripts/make-completions
/// and driven in real shells: bash as readline calls it, zsh typed into a tmux pane with TAB, fish
/// through `complete -C`. In each: without typing `analyze` (the default subcommand), files after
/// -r and -o, interfaces after -i, users after -Z, formats and fields.
@Suite struct ShellCompletionTests {
    static func has(_ tool: String) -> Bool { Unchecked.note(FileManager.default.isExecutableFile(atPath: "/usr/bin/\(tool)"), "shell completion in \(tool)") }
    static var inCI: Bool { ProcessInfo.processInfo.environment["CI"] != nil }

    /// The completions, written once per test into a fresh directory.
    static func makeCompletions() throws -> URL {
        let dir = CLI.temporaryDirectory()
        let make = try CLI.run([CLI.packageRoot.appendingPathComponent("scripts/make-completions").path, dir.path, CLI.binary],
                               executable: "/bin/bash")
        try #require(make.status == 0, "\(make.stderr)")
        return dir
    }

    /// -i runs `icy-sniff -D`: the binary under test comes first on the PATH.
    static var pathWithBinary: String {
        URL(fileURLWithPath: CLI.binary).deletingLastPathComponent().path + ":" + (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin")
    }

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

    @Test(.hangLimit)
    func bashCompletesWithoutTheSubcommand() throws {
        let dir = try Self.makeCompletions()
        defer { try? FileManager.default.removeItem(at: dir) }
        for file in ["icy-sniff.bash", "_icy-sniff", "icy-sniff.fish"] {
            #expect(FileManager.default.fileExists(atPath: dir.appendingPathComponent(file).path), "\(file)")
        }
        let path = Self.pathWithBinary
        func complete(_ line: String) throws -> [String] {
            let r = try CLI.run(["-c", Self.script, "complete", dir.appendingPathComponent("icy-sniff.bash").path, line],
                                executable: "/bin/bash", environment: ["PATH": path])
            #expect(r.status == 0, "\(line): \(r.stderr)")
            return r.text.split(separator: "\n").map(String.init)
        }
        #expect(try complete("icy-sniff --for").contains("--format"))
        #expect(try complete("icy-sniff --format ") == ["table", "tsv", "csv", "ndjson", "har", "heads", "websocket"])
        #expect(try complete("icy-sniff -r captures/wiki") == ["captures/wikipedia.pcap"])
        #expect(try complete("icy-sniff --har -o captures/tls-s").contains("captures/tls-sample.pcap"))
        #expect(try complete("icy-sniff -Z ro").contains("root"))
        #expect(try complete("icy-sniff -i l").contains("lo"))
        #expect(try complete("icy-sniff --fields ur") == ["url"])
        #expect(try complete("icy-sniff rep") == ["report"])
        #expect(try complete("icy-sniff report --format ") == ["text", "json"])
        #expect(try complete("icy-sniff analyze --stat").contains("--stats"))
    }

    @Test(.enabled(if: ShellCompletionTests.has("fish") || ShellCompletionTests.inCI,
                   "fish is not installed (scripts/install-deps installs it)"),
          .hangLimit)
    func fishCompletesWithoutTheSubcommand() throws {
        let dir = try Self.makeCompletions()
        defer { try? FileManager.default.removeItem(at: dir) }
        let script = dir.appendingPathComponent("icy-sniff.fish").path
        func complete(_ line: String) throws -> [String] {
            // `complete -C` prints each candidate, a tab and its description.
            let r = try CLI.run(["-N", "-c", "source $argv[1]; complete -C $argv[2]", script, line],
                                executable: "/usr/bin/fish", environment: ["PATH": Self.pathWithBinary])
            #expect(r.status == 0, "\(line): \(r.stderr)")
            return r.text.split(separator: "\n").map { String($0.split(separator: "\t", maxSplits: 1)[0]) }
        }
        #expect(try complete("icy-sniff ") == ["analyze", "diff", "help", "report"])
        #expect(try complete("icy-sniff --for") == ["--force", "--format"])
        #expect(try complete("icy-sniff --format ") == ["table", "tsv", "csv", "ndjson", "har", "heads", "websocket"])
        #expect(try complete("icy-sniff -r captures/wiki") == ["captures/wikipedia.pcap"])
        #expect(try complete("icy-sniff --har -o captures/tls-s").contains("captures/tls-sample.pcap"))
        #expect(try complete("icy-sniff -i l").contains("lo"))
        #expect(try complete("icy-sniff --fields ur") == ["url"])
        #expect(try complete("icy-sniff report --format ") == ["text", "json"])
        #expect(try complete("icy-sniff analyze --stat").contains("--stats"))
    }

    /// An interactive shell in a tmux pane: each line is typed, TAB pressed, and the screen read
    /// back once it shows what is expected (or after 10 s).
    final class Pane {
        let socket: String
        init(_ shell: String, name: String) throws {
            socket = "icy-\(name)-\(getpid())"
            let start = try CLI.run(["python3", "-c", "import os, sys; os.closerange(3, 65536); os.execvp(sys.argv[1], sys.argv[1:])",
                                     "tmux", "-L", socket, "-f", "/dev/null", "new-session", "-d", "-x", "160", "-y", "40", shell],
                                    executable: "/usr/bin/env")
            try #require(start.status == 0, "\(start.stderr)")
        }
        deinit { _ = try? CLI.run(["-L", socket, "kill-server"], executable: "/usr/bin/tmux") }
        func tmux(_ arguments: [String]) throws -> String {
            try CLI.run(["-L", socket] + arguments, executable: "/usr/bin/tmux").text
        }
        func screen(until done: (String) -> Bool) throws -> String {
            var text = ""
            for _ in 0..<100 {
                text = try tmux(["capture-pane", "-p", "-J"])
                if done(text) { break }
                Thread.sleep(forTimeInterval: 0.1)
            }
            return text
        }
        /// Runs `setup` and waits for the prompt it sets, `ready`.
        func start(_ setup: String) throws {
            _ = try tmux(["send-keys", setup, "Enter"])
            let text = try screen { $0.contains("ready>") }
            #expect(text.contains("ready>"), "\(text)")
        }
        /// Clears the screen, types `line` and TAB; the screen once it holds all of `expected`.
        func complete(_ line: String, expecting expected: [String]) throws -> String {
            _ = try tmux(["send-keys", "C-u", "clear", "Enter"])
            _ = try screen { !$0.contains("icy-sniff") }
            _ = try tmux(["send-keys", line, "Tab"])
            return try screen { s in expected.allSatisfy { s.contains($0) } }
        }
    }

    @Test(.enabled(if: (ShellCompletionTests.has("zsh") && ShellCompletionTests.has("tmux")) || ShellCompletionTests.inCI,
                   "zsh and tmux are not installed (scripts/install-deps installs them)"),
          .hangLimit)
    func zshCompletesWithoutTheSubcommand() throws {
        let dir = try Self.makeCompletions()
        defer { try? FileManager.default.removeItem(at: dir) }
        // zsh without the user's files, the completions on its fpath.
        let pane = try Pane("env PATH='\(Self.pathWithBinary)' TERM=xterm zsh -f -i", name: "zsh")
        try pane.start("cd '\(CLI.packageRoot.path)' && fpath=('\(dir.path)' $fpath) && autoload -U compinit && compinit -u -D && PS1='ready> '")
        for (line, expected) in [("icy-sniff -r captures/wiki", ["icy-sniff -r captures/wikipedia.pcap"]),
                                 ("icy-sniff --format ", ["table", "tsv", "ndjson", "heads"]),
                                 ("icy-sniff --fields ur", ["icy-sniff --fields url"]),
                                 ("icy-sniff -Z roo", ["icy-sniff -Z root"]),
                                 ("icy-sniff -i l", ["icy-sniff -i lo"]),
                                 ("icy-sniff rep", ["icy-sniff report"]),
                                 ("icy-sniff report --format ", ["text", "json"])] {
            let text = try pane.complete(line, expecting: expected)
            for e in expected { #expect(text.contains(e), "\(line) → \(text)") }
        }
    }

    /// What `complete -C` cannot show in fish 3 (the binary's own completions, such as -Z's
    /// users, read the cursor, which fish refuses outside an interactive session), typed in.
    @Test(.enabled(if: (ShellCompletionTests.has("fish") && ShellCompletionTests.has("tmux")) || ShellCompletionTests.inCI,
                   "fish and tmux are not installed (scripts/install-deps installs them)"),
          .hangLimit)
    func fishCompletesInATerminal() throws {
        let dir = try Self.makeCompletions()
        defer { try? FileManager.default.removeItem(at: dir) }
        let home = CLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: home) }
        let pane = try Pane("env PATH='\(Self.pathWithBinary)' TERM=xterm HOME='\(home.path)' XDG_CONFIG_HOME='\(home.path)' fish -N", name: "fish")
        try pane.start("cd '\(CLI.packageRoot.path)'; source '\(dir.path)/icy-sniff.fish'; function fish_prompt; echo 'ready> '; end")
        for (line, expected) in [("icy-sniff -Z roo", ["icy-sniff -Z root"]),
                                 ("icy-sniff -r captures/wiki", ["icy-sniff -r captures/wikipedia.pcap"])] {
            let text = try pane.complete(line, expecting: expected)
            for e in expected { #expect(text.contains(e), "\(line) → \(text)") }
        }
    }
}

import Foundation
import Testing

/// Every script in scripts/ and bench/ answers `--help` (and `-h`) with what it does, exit 0, and
/// does nothing else: before, `scripts/install --help` built the release to install it under a
/// prefix named `--help`, record-* scripts started servers and tcpdump writing into a folder of
/// that name, and bench/make-*-capture failed in `mkdir --help`. Run from an empty folder, which
/// must stay empty. Folders (scripts/lib: shell functions the scripts source) and C sources (bench/
/// *.c, built by scripts/bench) are not scripts.
@Suite struct ScriptHelpTests {
    @Test func everyScriptAnswersHelpAndDoesNothingElse() throws {
        var scripts: [String] = []
        for folder in ["scripts", "bench"] {
            scripts += try FileManager.default.contentsOfDirectory(atPath: CLI.packageRoot.appendingPathComponent(folder).path)
                .filter { name in
                    var isFolder: ObjCBool = false
                    let path = CLI.packageRoot.appendingPathComponent("\(folder)/\(name)").path
                    return !name.hasPrefix(".") && !name.hasSuffix(".c")
                        && FileManager.default.fileExists(atPath: path, isDirectory: &isFolder) && !isFolder.boolValue
                }.map { "\(folder)/\($0)" }
        }
        scripts.sort()
        #expect(scripts.count >= 40, "\(scripts)")
        for name in scripts {
            let script = CLI.packageRoot.appendingPathComponent(name).path
            for flag in ["--help", "-h"] {
                let dir = CLI.temporaryDirectory()
                defer { try? FileManager.default.removeItem(at: dir) }
                let r = try CLI.run(["-c", "cd \"$1\" && exec timeout 60 \"$0\" \"$2\"", script, dir.path, flag], executable: "/bin/bash")
                #expect(r.status == 0, "\(name) \(flag): exit \(r.status) \(r.stderr)")
                #expect(r.text.split(separator: "\n").count >= 1 && r.text.count > 40, "\(name) \(flag) says what it does: \(r.text)")
                let left = (try? FileManager.default.contentsOfDirectory(atPath: dir.path)) ?? []
                #expect(left.isEmpty, "\(name) \(flag) wrote \(left)")
            }
        }
    }
}

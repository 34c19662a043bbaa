import Foundation
import Testing

/// Batch over an archive: a directory with good, gzip-compressed, pcapng, truncated, empty and
/// non-capture files.
@Suite struct BatchTests {
    func makeArchive() throws -> URL {
        let dir = CLI.temporaryDirectory().appendingPathComponent("archive")
        let fm = FileManager.default
        try fm.createDirectory(at: dir.appendingPathComponent("phone/day2"), withIntermediateDirectories: true)
        try fm.copyItem(atPath: CLI.corpus("zeek/get.pcap"), toPath: dir.appendingPathComponent("get.pcap").path)
        try fm.copyItem(atPath: CLI.capture("wikipedia.pcap"), toPath: dir.appendingPathComponent("phone/wikipedia.pcap").path)
        try fm.copyItem(atPath: CLI.capture("nginx-cache-demo.pcap.gz"), toPath: dir.appendingPathComponent("phone/day2/nginx.pcap.gz").path)
        try fm.copyItem(atPath: CLI.corpus("zeek/zeek-image-1080-80-x.pcapng"), toPath: dir.appendingPathComponent("image.pcapng").path)
        let whole = try Data(contentsOf: URL(fileURLWithPath: CLI.corpus("pcap2har/fhs.pcap")))
        try whole.prefix(whole.count / 2).write(to: dir.appendingPathComponent("truncated.pcap"))
        try Data().write(to: dir.appendingPathComponent("empty.pcap"))
        try Data("just notes\n".utf8).write(to: dir.appendingPathComponent("notes.txt"))
        return dir
    }

    @Test func outDirGetsOneHARPerCaptureAndRerunsSkipUpToDate() throws {
        let archive = try makeArchive()
        let out = archive.deletingLastPathComponent().appendingPathComponent("out")
        let r = try CLI.run(["-r", archive.path, "--out-dir", out.path, "-j", "2"])
        #expect(r.status == 0, "\(r.stderr)")
        // empty.pcap is named as a capture: said damaged (it was skipped with notes.txt, unsaid).
        #expect(r.stderr.contains("empty.pcap' is damaged: empty file"), "\(r.stderr)")
        let made = FileManager.default.enumerator(atPath: out.path)!.allObjects.compactMap { $0 as? String }.filter { $0.hasSuffix(".har") }.sorted()
        #expect(made == ["get.har", "image.har", "phone/day2/nginx.har", "phone/wikipedia.har", "truncated.har"])
        #expect(r.stderr.contains("6 captures (0 failed, 2 damaged"))
        #expect(r.stderr.contains("1 other files skipped"))
        #expect(r.stderr.contains("truncated.pcap' is damaged"))
        // Every output is a complete HAR; the damaged capture's says so in its comment.
        for name in made {
            let json = try JSONSerialization.jsonObject(with: Data(contentsOf: out.appendingPathComponent(name))) as? [String: Any]
            #expect(json?["log"] != nil, "\(name)")
        }
        let truncated = try String(contentsOf: out.appendingPathComponent("truncated.har"), encoding: .utf8)
        #expect(truncated.contains("truncated.pcap' is damaged after packet"))
        let nginx = try JSONSerialization.jsonObject(with: Data(contentsOf: out.appendingPathComponent("phone/day2/nginx.har"))) as! [String: Any]
        #expect(((nginx["log"] as! [String: Any])["entries"] as! [Any]).count == 12)
        // No temporary files are left.
        let all = FileManager.default.enumerator(atPath: out.path)!.allObjects.compactMap { $0 as? String }
        #expect(!all.contains { ($0 as NSString).lastPathComponent.hasPrefix(".") })

        let again = try CLI.run(["-r", archive.path, "--out-dir", out.path])
        #expect(again.stderr.contains("5 up to date"))
        let forced = try CLI.run(["-r", archive.path, "--out-dir", out.path, "--force", "--quiet"])
        #expect(forced.status == 0)
    }

    /// A batch uses NAME.keys beside NAME.pcap, as captures/ lays out its samples: the HTTP/3
    /// sample's 8 transactions are decrypted in the folder as with --keylog alone (it ignored
    /// the key log and listed the connections only).
    @Test func aKeyLogBesideItsCaptureIsUsed() throws {
        let dir = CLI.temporaryDirectory()
        for name in ["h3-sample.pcap", "h3-sample.keys", "wikipedia.pcap"] {
            try FileManager.default.copyItem(atPath: CLI.capture(name), toPath: dir.appendingPathComponent(name).path)
        }
        let r = try CLI.run(["-r", dir.path, "--format", "tsv", "--fields", "capture,protocol,status"])
        #expect(r.status == 0, "\(r.stderr)")
        let h3 = r.text.split(separator: "\n").filter { $0.contains("h3-sample.pcap") && $0.contains("\th3\t") }
        #expect(h3.count == 8, "\(r.text)")
        #expect(r.stderr.contains("2 captures (0 failed, 0 damaged, 1 other files skipped)"), "\(r.stderr)")
    }

    /// A file named as a capture that is none fails as it does alone (exit 2, said); it was
    /// skipped with the folder's other files, exit 0.
    @Test func aFileNamedAsACaptureThatIsNoneFails() throws {
        let dir = CLI.temporaryDirectory()
        try FileManager.default.copyItem(atPath: CLI.capture("wikipedia.pcap"), toPath: dir.appendingPathComponent("good.pcap").path)
        try Data("not a capture at all".utf8).write(to: dir.appendingPathComponent("junk.pcap"))
        try Data("notes".utf8).write(to: dir.appendingPathComponent("notes.txt"))
        let r = try CLI.run(["-r", dir.path, "--format", "tsv"])
        #expect(r.status == 2 && r.stderr.contains("junk.pcap' is not a pcap or pcapng capture"), "\(r.stderr)")
        #expect(r.stderr.contains("2 captures (1 failed, 0 damaged, 1 other files skipped)"), "\(r.stderr)")
        #expect(r.text.split(separator: "\n").count == 16, "the good capture's 15 rows")
    }

    @Test func mergedNDJSONHasACaptureColumnAndFailuresSetTheExitCode() throws {
        let archive = try makeArchive()
        let r = try CLI.run(["-r", archive.path, "-r", "/nonexistent.pcap", "--format", "ndjson"])
        #expect(r.status == 2, "a capture that could not be read")
        #expect(r.stderr.contains("cannot open '/nonexistent.pcap'"))
        let lines = r.text.split(separator: "\n")
        let captures = Set(lines.compactMap { line -> String? in
            let o = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
            return (o?["capture"] as? String).map { ($0 as NSString).lastPathComponent }
        })
        #expect(captures == ["get.pcap", "wikipedia.pcap", "nginx.pcap.gz", "image.pcapng", "truncated.pcap"])
        #expect(lines.count >= 1 + 15 + 12 + 1)
    }
}

@Suite struct BatchNamingTests {
    @Test func capturesWithTheSameNameDoNotOverwriteEachOther() throws {
        let root = CLI.temporaryDirectory()
        for d in ["a", "b"] {
            try FileManager.default.createDirectory(at: root.appendingPathComponent(d), withIntermediateDirectories: true)
            try FileManager.default.copyItem(atPath: CLI.capture("wikipedia.pcap"), toPath: root.appendingPathComponent("\(d)/x.pcap").path)
        }
        let out = root.appendingPathComponent("out")
        let r = try CLI.run(["-r", root.appendingPathComponent("a").path, "-r", root.appendingPathComponent("b").path, "--out-dir", out.path])
        #expect(r.status == 0)
        #expect(try FileManager.default.contentsOfDirectory(atPath: out.path).sorted() == ["x-2.har", "x.har"])
    }
}

@Suite struct BatchWalkTests {
    /// The directory walk (libc, no Foundation): a link to a capture is a capture; a link to a
    /// directory, here one that loops back to the top, is neither walked nor counted.
    @Test func linksToCapturesCountAndLinkedDirectoriesAreNotWalked() throws {
        let root = CLI.temporaryDirectory().appendingPathComponent("walk")
        let fm = FileManager.default
        try fm.createDirectory(at: root.appendingPathComponent("deep/er"), withIntermediateDirectories: true)
        try fm.copyItem(atPath: CLI.corpus("zeek/get.pcap"), toPath: root.appendingPathComponent("deep/er/get.pcap").path)
        try fm.createSymbolicLink(atPath: root.appendingPathComponent("alias.pcap").path, withDestinationPath: "deep/er/get.pcap")
        try fm.createSymbolicLink(atPath: root.appendingPathComponent("deep/loop").path, withDestinationPath: "..")
        let out = root.deletingLastPathComponent().appendingPathComponent("walk-out/a/b")
        let r = try CLI.run(["-r", root.path, "--out-dir", out.path, "-j", "2"])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stderr.contains("2 captures (0 failed, 0 damaged)"), "\(r.stderr)")
        let made = fm.enumerator(atPath: out.path)!.allObjects.compactMap { $0 as? String }.filter { $0.hasSuffix(".har") }.sorted()
        #expect(made == ["alias.har", "deep/er/get.har"])
    }
}

/// The merged TSV of several captures says where each row came from (issue 19; README says so).
@Suite struct MergedCaptureColumnTests {
    @Test func mergedTSVLeadsWithTheCaptureColumnUnlessFieldsAreGiven() throws {
        let r = try CLI.run(["-r", CLI.capture("wikipedia.pcap"), "-r", CLI.capture("nginx-sll2.pcap"), "--format", "tsv"])
        let lines = r.text.split(separator: "\n")
        #expect(lines.first?.hasPrefix("capture\ttime\tclient\t") == true, "\(lines.first ?? "")")
        #expect(lines.dropFirst().allSatisfy { $0.hasPrefix(CLI.capture("wikipedia.pcap")) || $0.hasPrefix(CLI.capture("nginx-sll2.pcap")) })
        let given = try CLI.run(["-r", CLI.capture("wikipedia.pcap"), "-r", CLI.capture("nginx-sll2.pcap"), "--format", "tsv",
                                 "--fields", "method,status"])
        #expect(given.text.hasPrefix("method\tstatus\n"))
    }
}

import DeltaFeedServer
import EventHTTP

/// Feeds one input to every parser of untrusted bodies. Errors are expected answers; only a
/// crash (or a sanitizer report) is a finding.
func exercise(_ bytes: [UInt8]) {
    _ = try? UntrustedBodies.diff(bytes)
    _ = try? UntrustedBodies.postedSnapshot(bytes)
}

#if FUZZING
/// libFuzzer's driver, entered from the executable's main (SwiftPM names it `DeltaFeedFuzz_main`).
@_silgen_name("LLVMFuzzerRunDriver")
func runFuzzerDriver(
    _ argc: UnsafeMutablePointer<CInt>,
    _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>,
    _ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt
) -> CInt

@_cdecl("DeltaFeedFuzz_main")
func fuzzMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    var count = argc
    var arguments = argv
    return runFuzzerDriver(&count, &arguments) { data, size in
        exercise(data.map { Array(UnsafeBufferPointer(start: $0, count: size)) } ?? [])
        return 0
    }
}
#else
/// Without libFuzzer: replays the files named on the command line (a corpus or a crash).
@main
struct Replay {
    static func main() throws {
        for path in CommandLine.arguments.dropFirst() {
            exercise(try readFile(path))
        }
        print("replayed \(CommandLine.arguments.count - 1) inputs")
    }
}
#endif

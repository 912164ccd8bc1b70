#if canImport(Glibc)
import Glibc
#endif

struct ReadError: Error { let path: String }

/// The bytes of the file at `path`.
func readFile(_ path: String) throws -> [UInt8] {
    guard let file = fopen(path, "rb") else { throw ReadError(path: path) }
    defer { fclose(file) }
    var bytes: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 65536)
    while true {
        let count = fread(&chunk, 1, chunk.count, file)
        if count <= 0 { break }
        bytes.append(contentsOf: chunk[..<count])
    }
    return bytes
}

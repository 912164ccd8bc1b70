import FeedStore
import Foundation
import SQLiteStore
import StoreOracle
import Testing

@Suite("Concurrency")
struct ConcurrencyTests {
    @Test("Readers on several threads run while a writer writes, without errors and with consistent snapshots")
    func concurrentReadsDuringWrites() throws {
        let store = try makeStore()
        try store.seed(DemoSeed(users: 200, videos: 4000, ads: 10, seed: 5))
        let watched = try makeVideo(store, author: 1, title: "Watched", likes: 0)
        let baseVersion = store.changeVersion

        let errors = ErrorLog()
        let writes = 300
        let readers = 4
        let group = DispatchGroup()
        let done = ManualFlag()

        for reader in 0..<readers {
            group.enter()
            Thread {
                defer { group.leave() }
                var iterations = 0
                while !done.isSet || iterations < 20 {
                    iterations += 1
                    do {
                        let viewer = Int64(1 + (reader * 37 + iterations) % 200)
                        // Inside one read: the version and the data agree (likes == writes so far).
                        let (version, video) = try store.read { r in
                            (try r.changeVersion(), try r.video(id: watched.id))
                        }
                        if video?.likeCount != version - baseVersion {
                            errors.append("inconsistent snapshot: version \(version), likes \(String(describing: video?.likeCount))")
                        }
                        _ = try store.read { try $0.followedVideos(viewer: viewer, limit: 30) }
                        _ = try store.read { try $0.popularVideos(limit: 20, excludingAuthors: [viewer]) }
                        _ = try store.read { try $0.followSuggestions(for: viewer) }
                        _ = try store.read { try $0.activeAds() }
                        if store.changeVersion < version - 1 {
                            errors.append("cached version behind by more than one commit")
                        }
                    } catch {
                        errors.append("reader \(reader): \(error)")
                    }
                }
            }.start()
        }

        for index in 0..<writes {
            do {
                try store.addToVideoCounts(id: watched.id, likes: 1)
                if index % 10 == 0 {
                    try store.saveSnapshot(id: "s\(index)", viewer: Int64(index % 7), structure: Data([1]))
                }
            } catch {
                errors.append("writer: \(error)")
            }
        }
        done.set()
        group.wait()

        #expect(errors.messages.isEmpty, "\(errors.messages.prefix(5))")
        #expect(store.changeVersion == baseVersion + Int64(writes))
        #expect(try store.read { try $0.video(id: watched.id) }?.likeCount == Int64(writes))
    }
}

final class ErrorLog: @unchecked Sendable {
    private let lock = NSLock()
    private var storage: [String] = []

    func append(_ message: String) {
        lock.lock()
        storage.append(message)
        lock.unlock()
    }

    var messages: [String] {
        lock.lock()
        defer { lock.unlock() }
        return storage
    }
}

final class ManualFlag: @unchecked Sendable {
    private let lock = NSLock()
    private var value = false

    func set() {
        lock.lock()
        value = true
        lock.unlock()
    }

    var isSet: Bool {
        lock.lock()
        defer { lock.unlock() }
        return value
    }
}

import FeedIndex

/// For each cached page, the changes applied to the index since that may touch it, noted once
/// per change rather than looked for once per poll.
///
/// Without it a poll judged every change applied since its page was last checked: at 500
/// writes/s a viewer polling every half second judged about 300 changes, of which about 15 could
/// touch its page, so what a poll cost grew with how often everyone else wrote. Now each change
/// is noted on the pages whose ``PageInterests`` it may touch (an ``InterestIndex``, as the live
/// streams use), once, by the first poll that needs the changes; a poll judges only the changes
/// noted on its page. A poll whose page no change touched costs a lookup.
///
/// The notes are a superset of the changes that matter (``PageInterests`` is), so a page judged
/// against them is judged as against every change. Where a note may be missing the page is
/// judged against the index's own log instead (``changes(for:stamp:after:view:)``): the changes
/// from before its interests were registered, any the index forgot before they were noted, and
/// a page whose interests are not the ones registered (an older entry a concurrent poll holds).
///
/// The live streams and the long polls use the same notes: a page one of them holds
/// (``hold(_:by:)``) is reported to that holder by ``takeTouchedHeld(by:_:)`` once a change is
/// noted on it (or may have been missed), so each checks only the streams or requests a change
/// may touch without registering the pages itself.
///
/// Not thread-safe: ``PageCache`` keeps it under the lock of its cache, so registering a page and
/// caching it are one step.
struct PageMarks {
    /// A registered page: what its interests were taken from, and the changes noted on it.
    private struct Mark {
        /// The registered interests' stamp: notes hold for an entry with this stamp only.
        var stamp: PageInterests.Stamp
        /// Changes applied after this sequence that may touch the page are in `noted`; those up
        /// to it are not noted (they are read from the index's log when needed).
        var notedAfter: Int64
        /// The changes that may touch the page, oldest first, by sequence and ordinal.
        var noted: [(sequence: Int64, ordinal: Int64)] = []
        /// The holders holding the page, one bit per ``PageHolder``.
        var held: UInt8

        /// Notes a change (a change may reach a page by several of its interests: once).
        mutating func note(_ ordinal: Int64, at sequence: Int64, keeping maxNotes: Int) {
            if noted.last?.ordinal == ordinal { return }
            if noted.count == maxNotes {
                // Too many: from here on the page reads them from the log.
                noted.removeAll(keepingCapacity: true)
                notedAfter = sequence
            } else {
                noted.append((sequence, ordinal))
            }
        }

        /// Forgets the notes up to `sequence`: the page is known current there.
        mutating func drop(through sequence: Int64) {
            guard notedAfter < sequence else { return }
            noted.removeFirst(noted.firstIndex { $0.sequence > sequence } ?? noted.endIndex)
            notedAfter = sequence
        }
    }

    /// A page noted more often than `maxNotes` since it was last asked for is judged against
    /// the index's log instead: it keeps no longer list.
    static let defaultMaxNotes = 256
    private let maxNotes: Int

    private var interests = InterestIndex<PageKey>()
    /// By the slot of the page in `interests`.
    private var marks: [Mark?] = []
    /// The ordinal of the next change to note.
    private var nextOrdinal: Int64
    /// Every change applied up to this sequence has been noted (or counted as forgotten).
    private(set) var notedThrough: Int64
    /// Changes up to this sequence were never noted: the index forgot them before any poll
    /// noted them. Every page reads them from the log (which has forgotten them too: it is
    /// composed again).
    private var forgottenThrough: Int64
    /// Pages each holder holds (by ``PageHolder/rawValue``), each with how many holds.
    private var heldKeys: [[PageKey: Int]] = Array(repeating: [:], count: PageHolder.allCases.count)
    /// Held pages noted on (or registered past changes they were not noted) since the holder's
    /// last ``takeTouchedHeld(by:_:)``, by holder.
    private var touchedHeld: [Set<PageKey>] = Array(repeating: [], count: PageHolder.allCases.count)

    /// Notes start with the next change `view`'s index applies.
    init(from view: IndexView, maxNotes: Int = PageMarks.defaultMaxNotes) {
        self.maxNotes = max(1, maxNotes)
        nextOrdinal = view.changeOrdinals.upperBound
        notedThrough = view.sequence
        forgottenThrough = view.sequence
    }

    /// Pages registered.
    var count: Int { interests.count }

    /// Registers the page `key`, current at `validatedAt`, as one whose interests have `stamp`
    /// (``CachedPage/interestStamp``); `interests` is asked only when the stamp is not the one
    /// registered. Changes after ``notedThrough`` are noted against them from now on; a held
    /// page that may have missed changes before is reported touched.
    mutating func register(_ key: PageKey, validatedAt: Int64, stamp: PageInterests.Stamp, interests make: () -> PageInterests) {
        if let slot = interests.slot(of: key), marks[Int(slot)]?.stamp == stamp { return }
        let slot = Int(interests.update(key, make()))
        if slot == marks.count { marks.append(nil) }
        let held = heldBits(of: key)
        marks[slot] = Mark(stamp: stamp, notedAfter: notedThrough, held: held)
        if held != 0, validatedAt < notedThrough { markTouched(key, holders: held) }
    }

    /// The holders of `key`, one bit each.
    private func heldBits(of key: PageKey) -> UInt8 {
        var bits: UInt8 = 0
        for holder in PageHolder.allCases where heldKeys[holder.rawValue][key] != nil { bits |= holder.bit }
        return bits
    }

    /// Reports `key` touched to each holder in `holders`.
    private mutating func markTouched(_ key: PageKey, holders: UInt8) {
        for holder in PageHolder.allCases where holders & holder.bit != 0 { touchedHeld[holder.rawValue].insert(key) }
    }

    /// Forgets the page `key` (it left the cache).
    mutating func remove(_ key: PageKey) {
        guard let slot = interests.remove(key) else { return }
        marks[Int(slot)] = nil
    }

    /// `holder` holds the page `key`: from now on ``takeTouchedHeld(by:_:)`` reports it to
    /// `holder` when a change is noted on it.
    mutating func hold(_ key: PageKey, by holder: PageHolder) {
        heldKeys[holder.rawValue][key, default: 0] += 1
        if let slot = interests.slot(of: key) { marks[Int(slot)]?.held |= holder.bit }
    }

    /// Undoes one ``hold(_:by:)``.
    mutating func release(_ key: PageKey, by holder: PageHolder) {
        guard let count = heldKeys[holder.rawValue][key] else { return }
        guard count == 1 else {
            heldKeys[holder.rawValue][key] = count - 1
            return
        }
        heldKeys[holder.rawValue][key] = nil
        touchedHeld[holder.rawValue].remove(key)
        if let slot = interests.slot(of: key) { marks[Int(slot)]?.held &= ~holder.bit }
    }

    /// The pages `holder` holds that a change may have touched since its last call: noted on,
    /// or registered past changes they were not noted. Notes the changes `view`'s index applied
    /// first.
    mutating func takeTouchedHeld(by holder: PageHolder, _ view: IndexView) -> Set<PageKey> {
        catchUp(view)
        let touched = touchedHeld[holder.rawValue]
        touchedHeld[holder.rawValue] = []
        return touched
    }

    /// Notes every change `view`'s index applied since the last call on the pages it may touch.
    mutating func catchUp(_ view: IndexView) {
        let ordinals = view.changeOrdinals
        if nextOrdinal < ordinals.lowerBound {
            // Applied and forgotten before anyone noted them: any held page may have changed.
            forgottenThrough = view.sequence
            for holder in PageHolder.allCases { touchedHeld[holder.rawValue].formUnion(heldKeys[holder.rawValue].keys) }
        } else {
            for ordinal in nextOrdinal..<ordinals.upperBound {
                guard let (sequence, change) = view.change(ordinal: ordinal) else { continue }
                interests.forEachSlot(touchedBy: change) { slot in note(ordinal, at: sequence, on: Int(slot)) }
            }
        }
        nextOrdinal = ordinals.upperBound
        notedThrough = view.sequence
    }

    private mutating func note(_ ordinal: Int64, at sequence: Int64, on slot: Int) {
        // In place (the optional chain modifies the array's element): no copy of the list.
        marks[slot]?.note(ordinal, at: sequence, keeping: maxNotes)
        if let held = marks[slot]?.held, held != 0, let key = interests.member(at: Int32(slot)) { markTouched(key, holders: held) }
    }

    /// The changes applied after `validatedAt` that may touch the page `key`, whose cached entry
    /// has `stamp`, oldest first: the noted ones, and from the log those that could not be noted
    /// (every change since `validatedAt` for a page not registered with that stamp). Nil when
    /// the index no longer holds them all (the page is composed again). Call ``catchUp(_:)``
    /// with the same view first.
    ///
    /// Notes up to `validatedAt` are dropped: a poll of an older entry (one a concurrent poll
    /// still holds) reads them from the log.
    mutating func changes(for key: PageKey, stamp: PageInterests.Stamp, after validatedAt: Int64, view: IndexView) -> [IndexChange]? {
        guard let slot = interests.slot(of: key).map(Int.init), let mark = marks[slot], mark.stamp == stamp else {
            return view.changes(after: validatedAt)
        }
        let logged = max(mark.notedAfter, forgottenThrough)
        var changes: [IndexChange] = []
        if validatedAt < logged {
            guard let fromLog = view.changes(after: validatedAt, through: logged) else { return nil }
            changes = fromLog
        }
        let after = max(validatedAt, logged)
        let start = mark.noted.firstIndex { $0.sequence > after } ?? mark.noted.endIndex
        for (_, ordinal) in mark.noted[start...] {
            guard let (_, change) = view.change(ordinal: ordinal) else { return nil }
            changes.append(change)
        }
        marks[slot]?.drop(through: validatedAt)
        return changes
    }
}

/// Who holds a page to hear of the changes that may touch it (``FeedService/holdPage(viewer:parameters:for:)``):
/// each is told of its own pages, however many others hold them.
public enum PageHolder: Int, CaseIterable, Sendable {
    /// The live streams' thread.
    case liveStreams
    /// The long polls' thread.
    case longPolls

    var bit: UInt8 { 1 << UInt8(rawValue) }
}

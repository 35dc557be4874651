import Foundation

/// The transactions of one store that a history request's boundary selects, whatever engine keeps
/// the history: by transaction number (`Z_PK` of `ATRANSACTION`) or by timestamp (`ZTIMESTAMP`,
/// seconds since 2001).
enum HistoryRange: Equatable {
    case all
    case none
    /// Numbers above this one; reading them needs the history after it kept (see `keptAfter`).
    case after(Int64)
    /// Numbers up to and including this one.
    case through(Int64)
    /// Numbers below this one.
    case before(Int64)
    case afterTime(TimeInterval)
    case beforeTime(TimeInterval)

    /// The range a boundary selects in the store `storeID`: a token or transaction of another
    /// store selects everything after it, nothing before it.
    init(_ boundary: NSPersistentHistoryChangeRequest.Boundary, storeID: String) {
        switch boundary {
        case .afterToken(let token):
            self = token?.transactionNumber(inStore: storeID).map(Self.after) ?? .all
        case .afterDate(let date):
            self = .afterTime(date.timeIntervalSinceReferenceDate)
        case .afterTransaction(let store, let number):
            self = store == storeID ? .after(number) : .all
        case .beforeToken(let token):
            guard let token else { self = .all; return }
            self = token.transactionNumber(inStore: storeID).map(Self.through) ?? .none
        case .beforeDate(let date):
            self = .beforeTime(date.timeIntervalSinceReferenceDate)
        case .beforeTransaction(let store, let number):
            self = store == storeID ? .before(number) : .none
        }
    }

    /// The transaction after which history must be complete for this range to be answered
    /// truthfully (nil: any purge is fine).
    var keptAfter: Int64? {
        if case .after(let number) = self { return number }
        return nil
    }

    /// A SQL condition on a transaction table aliased `t`, with its one parameter (if any) written
    /// as `placeholder`, and that parameter.
    func condition(placeholder: String) -> (sql: String, parameter: Parameter?) {
        switch self {
        case .all: ("1 = 1", nil)
        case .none: ("1 = 0", nil)
        case .after(let number): ("t.Z_PK > \(placeholder)", .number(number))
        case .through(let number): ("t.Z_PK <= \(placeholder)", .number(number))
        case .before(let number): ("t.Z_PK < \(placeholder)", .number(number))
        case .afterTime(let seconds): ("t.ZTIMESTAMP > \(placeholder)", .time(seconds))
        case .beforeTime(let seconds): ("t.ZTIMESTAMP < \(placeholder)", .time(seconds))
        }
    }

    /// The value a condition compares with.
    enum Parameter: Equatable {
        case number(Int64)
        case time(TimeInterval)
    }

    /// Throws 134301 when the history after `number` was purged, so that reading after it would
    /// silently miss transactions: `newest` is the newest number ever given, `oldestKept` the
    /// lowest still stored (nil when none is).
    static func checkNotExpired(_ number: Int64, newest: Int64, oldestKept: Int64?) throws {
        let purgedThrough = oldestKept.map { $0 - 1 } ?? newest
        if number < purgedThrough {
            throw CoreDataError.make(.persistentHistoryTokenExpired,
                "The persistent history token has expired: the history after transaction \(number) was deleted (kept history starts after \(purgedThrough)).")
        }
    }
}

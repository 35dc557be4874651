import Foundation

/// Makes the `NSDictionary` results of a `.dictionaryResultType` fetch from the store's rows.
///
/// Each result is a plain `NSDictionary`, as `NSDictionary(dictionary:)` would make it: values
/// bridged as `as AnyObject` bridges them (numbers to `NSNumber`, strings to `NSString`, …), read
/// back the same way. What differs is the keys: `NSDictionary(dictionary:)` bridges every key of
/// every row to a new `NSString`, which then has to be hashed; here the rows of one fetch share one
/// `NSString` per name, made once. (A subclass of `NSDictionary` reading the row in place would
/// be cheaper still, but Foundation on Linux bridges a subclass to an empty Swift dictionary.)
struct DictionaryResultMaker {
    /// The key objects made so far, by name; a fetch has a few.
    private var keys: [(name: String, key: NSString)] = []

    /// The dictionary of one row (names to values; a NULL has no entry).
    mutating func make(_ row: [String: Any]) -> NSDictionary {
        let count = row.count
        return withUnsafeTemporaryAllocation(of: NSObject.self, capacity: count) { keyBuffer in
            withUnsafeTemporaryAllocation(of: AnyObject.self, capacity: count) { objectBuffer in
                // A row of NULLs has no entries (and the buffers may have no address).
                var index = 0
                for (name, value) in row {
                    keyBuffer.initializeElement(at: index, to: key(for: name))
                    objectBuffer.initializeElement(at: index, to: Self.object(value))
                    index += 1
                }
                defer {
                    keyBuffer.baseAddress?.deinitialize(count: count)
                    objectBuffer.baseAddress?.deinitialize(count: count)
                }
                return NSDictionary(objects: objectBuffer.baseAddress, forKeys: keyBuffer.baseAddress, count: count)
            }
        }
    }

    /// A value as the object `as AnyObject` bridges it to, without the runtime's search through
    /// bridging conformances for the types stores read (numbers, strings, object IDs); any other
    /// value is bridged by the runtime.
    @inline(__always)
    static func object(_ value: Any) -> AnyObject {
        if let number = ExistentialFastPath.load(value, as: Int64.self) { return NSNumber(value: number) }
        if let string = ExistentialFastPath.string(value) { return NSString(string: string) }
        if let number = ExistentialFastPath.load(value, as: Double.self) { return NSNumber(value: number) }
        if let id = ExistentialFastPath.instance(value, boxedAs: NSManagedObjectID.self) { return id }
        if let number = ExistentialFastPath.load(value, as: Int32.self) { return NSNumber(value: number) }
        if let number = ExistentialFastPath.load(value, as: Int16.self) { return NSNumber(value: number) }
        if let flag = ExistentialFastPath.load(value, as: Bool.self) { return NSNumber(value: flag) }
        return value as AnyObject
    }

    /// The shared key object of a name.
    private mutating func key(for name: String) -> NSString {
        for known in keys where known.name == name { return known.key }
        let key = NSString(string: name)
        keys.append((name, key))
        return key
    }
}

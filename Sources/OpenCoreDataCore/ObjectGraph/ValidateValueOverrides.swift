import Foundation

/// Tells whether a class overrides `NSManagedObject.validateValue(_:forKey:)`, so that saves call
/// it for every property only where it can answer differently from the model's own rules.
///
/// Core Data calls `validate<Key>` methods that it finds by name; here a class routes its keys in
/// an override of `validateValue(_:forKey:)`, and a save must call the override for each property.
/// Calling through it costs, for every property of every saved object, the value boxed as `Any?`,
/// a dynamic call and the box destroyed: a third more instructions in a save of 50,000 new objects
/// of ten attributes, which a class without an override would pay for nothing.
///
/// A Swift class's metadata holds its vtable: one word per overridable method, at the same place
/// in every subclass, holding the implementation the class uses. Two private subclasses, alike but
/// for an override of `validateValue(_:forKey:)`, differ from each other in that word and agree
/// with `NSManagedObject` in it; it is found once by comparing the three classes' metadata. A
/// class overrides the method exactly when its word differs from `NSManagedObject`'s.
///
/// Invariant: `vtableEntry` is nil unless exactly one word meets that test; then every class is
/// taken to override the method (always correct, only slower). On Apple's platforms, where the
/// Objective-C runtime could be asked, the same answer is given without reading metadata.
enum ValidateValueOverrides {
    private final class Inheriting: NSManagedObject {}
    private final class Overriding: NSManagedObject {
        override func validateValue(_ value: inout Any?, forKey key: String) throws {}
    }

    /// The method's vtable entry: its index, in words from a class metadata's address point, and
    /// `NSManagedObject`'s implementation there.
    static let vtableEntry: (index: Int, base: UInt)? = {
        #if canImport(Darwin)
        return nil
        #else
        let base = words(of: NSManagedObject.self), inheriting = words(of: Inheriting.self), overriding = words(of: Overriding.self)
        let count = min(base.count, inheriting.count, overriding.count)
        let candidates = (0..<count).filter { base[$0] == inheriting[$0] && inheriting[$0] != overriding[$0] }
        return candidates.count == 1 ? (candidates[0], base[candidates[0]]) : nil
        #endif
    }()

    /// Whether objects of `type` (a subclass of `NSManagedObject`, or the class itself) may
    /// answer `validateValue(_:forKey:)` differently from `NSManagedObject`.
    @inline(__always)
    static func overridden(by type: NSManagedObject.Type) -> Bool {
        if type == NSManagedObject.self { return false }
        guard let entry = vtableEntry else { return true }
        return unsafeBitCast(type, to: UnsafeRawPointer.self).load(fromByteOffset: entry.index * 8, as: UInt.self) != entry.base
    }

    /// A class metadata's words from its address point to its end (Swift's class metadata layout
    /// without Objective-C interoperation: the class object's size and the address point's offset
    /// in it are two 32-bit fields of the fifth word).
    private static func words(of type: AnyClass) -> [UInt] {
        let metadata = unsafeBitCast(type, to: UnsafeRawPointer.self)
        let size = Int(metadata.load(fromByteOffset: 4 * 8, as: UInt32.self))
        let addressPoint = Int(metadata.load(fromByteOffset: 4 * 8 + 4, as: UInt32.self))
        guard size > addressPoint, (size - addressPoint) % 8 == 0, size - addressPoint < 1 << 16 else { return [] }
        return (0..<(size - addressPoint) / 8).map { metadata.load(fromByteOffset: $0 * 8, as: UInt.self) }
    }
}

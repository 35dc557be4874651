import Foundation

/// Finds Swift classes by name in every loaded image, as the Objective-C runtime's
/// `NSClassFromString` does on Apple's platforms.
///
/// Every Swift image records a type context descriptor for each type it declares (the
/// `swift5_type_metadata` section) and registers its sections with the runtime as it loads;
/// `swift_enumerateAllMetadataSections` walks them. A class descriptor holds its name, a relative
/// pointer to its parent context (up to its module) and its metadata access function. The
/// directory indexes the non-generic classes of every image by simple name, once and again only
/// when an image has been loaded since, and calls a class's access function when it is asked for
/// (which also initializes the class, as any first use does).
///
/// Names are matched as Core Data's `representedClassName` is written: `Team`, `.Team` (Xcode's
/// "current product module"), `MyApp.Team` or a nested `MyApp.Outer.Team`.
enum SwiftClassDirectory {
    /// One class descriptor found in an image.
    // Sendable: `descriptor` points into a loaded image's read-only type metadata, which is never
    // written or freed while the process runs.
    struct Entry: @unchecked Sendable {
        /// The dotted path of the class's parents and its own name, from its module: `MyApp.Outer.Team`.
        let qualifiedName: String
        /// The class's descriptor, from which its metadata is obtained.
        let descriptor: UnsafeRawPointer
    }

    private struct Index {
        var sectionCount = -1
        var entriesBySimpleName: [String: [Entry]] = [:]
    }

    private static let index = LockedValue(Index())

    /// The classes named `name` (any of the forms above), each as its metatype, in no set order.
    static func classes(named name: String) -> [AnyClass] {
        #if canImport(Darwin)
        // The Objective-C runtime knows every class by its qualified name.
        return NSClassFromString(name).map { [$0] } ?? []
        #else
        let parts = name.split(separator: ".", omittingEmptySubsequences: true).map(String.init)
        guard let simple = parts.last else { return [] }
        let path = parts.count > 1 ? parts.joined(separator: ".") : nil
        let entries = entries(forSimpleName: simple)
        let matching = entries.filter { entry in
            guard let path else { return true }
            return entry.qualifiedName == path
        }
        return matching.compactMap { metadata(of: $0.descriptor) }
        #endif
    }

    #if !canImport(Darwin)
    private static func entries(forSimpleName simple: String) -> [Entry] {
        let sectionCount = countSections()
        return index.withLock { index in
            if index.sectionCount != sectionCount {
                index.entriesBySimpleName = buildIndex()
                index.sectionCount = sectionCount
            }
            return index.entriesBySimpleName[simple] ?? []
        }
    }

    // MARK: Reading the runtime's records

    /// What a walk over the images gathers: their number and, when asked, their classes.
    private final class Walk {
        let indexing: Bool
        var sectionCount = 0
        var entriesBySimpleName: [String: [Entry]] = [:]
        init(indexing: Bool) { self.indexing = indexing }
    }

    /// The number of images whose sections the runtime knows.
    private static func countSections() -> Int {
        walk(indexing: false).sectionCount
    }

    /// Every non-generic class of every loaded image, by simple name.
    private static func buildIndex() -> [String: [Entry]] {
        walk(indexing: true).entriesBySimpleName
    }

    private static func walk(indexing: Bool) -> Walk {
        let walk = Walk(indexing: indexing)
        let context = Unmanaged.passRetained(walk)
        swift_enumerateAllMetadataSections(visitSections, context.toOpaque())
        context.release()
        return walk
    }

    /// Visits one image's sections. `MetadataSections` starts with four words (version, reserved,
    /// next, prev), then (start, length) ranges, the third of which is `swift5_type_metadata`.
    private static let visitSections: @convention(c) (UnsafeRawPointer, UnsafeMutableRawPointer) -> Bool = { sections, context in
        let walk = Unmanaged<Walk>.fromOpaque(context).takeUnretainedValue()
        walk.sectionCount += 1
        guard walk.indexing else { return true }
        let rangeStart = 4 * MemoryLayout<UInt>.size + 2 * 2 * MemoryLayout<UInt>.size
        let start = sections.load(fromByteOffset: rangeStart, as: UInt.self)
        let length = Int(sections.load(fromByteOffset: rangeStart + MemoryLayout<UInt>.size, as: UInt.self))
        guard length >= 4, let base = UnsafeRawPointer(bitPattern: start) else { return true }
        for offset in stride(from: 0, to: length - 3, by: 4) {
            guard let descriptor = typeDescriptor(atRecord: base + offset), let entry = classEntry(descriptor) else { continue }
            let simple = String(entry.qualifiedName.split(separator: ".").last ?? "")
            walk.entriesBySimpleName[simple, default: []].append(entry)
        }
        return true
    }

    /// The descriptor a type metadata record points to: a relative offset whose two low bits say
    /// whether it points to the descriptor (0) or to a pointer to it (1).
    private static func typeDescriptor(atRecord record: UnsafeRawPointer) -> UnsafeRawPointer? {
        let raw = record.loadUnaligned(as: Int32.self)
        guard raw != 0 else { return nil }
        let target = record + Int(raw & ~3)
        switch raw & 3 {
        case 0: return target
        case 1: return target.load(as: UnsafeRawPointer?.self)
        default: return nil
        }
    }

    /// Context descriptor kinds (the flags' low five bits).
    private enum Kind: UInt32 {
        case module = 0, `extension` = 1, anonymous = 2, `class` = 16, `struct` = 17, `enum` = 18
    }

    private static let genericFlag: UInt32 = 0x80

    /// An entry for a non-generic class descriptor; nil for any other descriptor.
    private static func classEntry(_ descriptor: UnsafeRawPointer) -> Entry? {
        let flags = descriptor.load(as: UInt32.self)
        guard flags & 0x1F == Kind.class.rawValue, flags & genericFlag == 0 else { return nil }
        var names: [String] = []
        var context: UnsafeRawPointer? = descriptor
        var module: String?
        while let current = context {
            let currentFlags = current.load(as: UInt32.self)
            switch Kind(rawValue: currentFlags & 0x1F) {
            case .module:
                module = name(of: current)
                context = nil
                continue
            case .class, .struct, .enum:
                guard let name = name(of: current) else { return nil }
                names.append(name)
            case .anonymous, .extension:
                // A private or local declaration, or one inside an extension: found by its simple
                // name and its module only.
                break
            case nil:
                return nil
            }
            context = parent(of: current)
        }
        guard let module else { return nil }
        return Entry(qualifiedName: ([module] + names.reversed()).joined(separator: "."), descriptor: descriptor)
    }

    /// A context's parent: a relative pointer at offset 4 whose low bit marks an indirect one.
    private static func parent(of context: UnsafeRawPointer) -> UnsafeRawPointer? {
        relativePointer(at: context + 4, indirectable: true)
    }

    /// A module's or type's name: a relative pointer to a C string at offset 8.
    private static func name(of context: UnsafeRawPointer) -> String? {
        relativePointer(at: context + 8, indirectable: false).map { String(cString: $0.assumingMemoryBound(to: CChar.self)) }
    }

    private static func relativePointer(at field: UnsafeRawPointer, indirectable: Bool) -> UnsafeRawPointer? {
        let raw = field.load(as: Int32.self)
        guard raw != 0 else { return nil }
        if indirectable, raw & 1 == 1 {
            return (field + Int(raw & ~1)).load(as: UnsafeRawPointer?.self)
        }
        return field + Int(raw)
    }

    /// A non-generic class's metadata, through its access function (a relative pointer at offset
    /// 12 of a type descriptor). The function takes a metadata request (0: complete) and returns
    /// the metadata in the first result register, where a C function returns a pointer.
    private static func metadata(of descriptor: UnsafeRawPointer) -> AnyClass? {
        guard let accessor = relativePointer(at: descriptor + 12, indirectable: false) else { return nil }
        typealias AccessFunction = @convention(c) (Int) -> UnsafeRawPointer?
        let function = unsafeBitCast(accessor, to: AccessFunction.self)
        guard let metadata = function(0) else { return nil }
        return unsafeBitCast(metadata, to: AnyClass.self)
    }
    #endif
}

#if !canImport(Darwin)
/// The Swift runtime's walk over the metadata sections of every loaded image (ELF and COFF
/// platforms); the callback returns whether to go on.
@_silgen_name("swift_enumerateAllMetadataSections")
private func swift_enumerateAllMetadataSections(
    _ body: @convention(c) (_ sections: UnsafeRawPointer, _ context: UnsafeMutableRawPointer) -> Bool,
    _ context: UnsafeMutableRawPointer
)
#endif

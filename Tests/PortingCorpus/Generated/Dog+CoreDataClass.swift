//
//  Dog+CoreDataClass.swift
//  Kennel
//
//  This file was generated and should not be edited.
//

import Foundation
#if canImport(CoreData)
import CoreData
#else
import OpenCoreData
#endif

public class Dog: NSManagedObject {

    // Core Data calls `validate<Key>` methods by name from `validateValue(_:forKey:)`; without
    // Objective-C the class routes its keys there (the porting rule for validation methods).
    public override func validateValue(_ value: inout Any?, forKey key: String) throws {
        try super.validateValue(&value, forKey: key)
        if key == "name" {
            try validateName(value)
        }
    }

    /// A dog's name can't be blank.
    func validateName(_ value: Any?) throws {
        guard let name = value as? String, !name.trimmingCharacters(in: .whitespaces).isEmpty else {
            throw NSError(domain: NSCocoaErrorDomain, code: NSValidationStringTooShortError, userInfo: [
                NSLocalizedDescriptionKey: "A dog needs a name.",
                NSValidationObjectErrorKey: self,
                NSValidationKeyErrorKey: "name",
            ])
        }
    }
}

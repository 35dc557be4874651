//
//  Walk+CoreDataProperties.swift
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


extension Walk {

    @nonobjc public class func fetchRequest() -> NSFetchRequest<Walk> {
        return NSFetchRequest<Walk>(entityName: "Walk")
    }

    @Managed public var date: Date?
    @Managed public var distance: NSNumber?
    @Managed public var steps: NSNumber?
    @Managed public var dog: Dog?

}

extension Walk : Identifiable {

}

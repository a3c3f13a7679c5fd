import Foundation

enum FileHandleStandardError {
    static func write(_ string: String) {
        FileHandle.standardError.write(Data(string.utf8))
    }
}

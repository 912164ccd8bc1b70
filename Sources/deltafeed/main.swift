@main struct Deltafeed { static func main() {} }

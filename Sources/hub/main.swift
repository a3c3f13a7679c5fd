import ArgumentParser
print("hub")

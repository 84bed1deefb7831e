def install(): print("ACTIVATED")

print("not a speedrun script")

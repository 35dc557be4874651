print("worldcup")

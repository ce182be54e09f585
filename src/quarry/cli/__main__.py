from quarry.cli.main import run

run()

from quarry.client.cli.main import run

run()

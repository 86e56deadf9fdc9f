from agentclash_cli.main import main

raise SystemExit(main())

"""memharness entry point in a checkout (the installed command is ``memharness``).

python run.py memory=memtree dataset=multihop
python run.py -m memory=full_context,memorystream,memtree dataset=sample
"""

from memharness.eval.cli.hydra_main import main

if __name__ == "__main__":
    main()

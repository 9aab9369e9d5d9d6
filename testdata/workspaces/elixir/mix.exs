defmodule E.MixProject do
end

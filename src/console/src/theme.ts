// Light, dark, or as the system says (and when the system changes); remembered per browser. The page
// always carries the theme it shows in data-theme, so the stylesheet has one rule per theme.
import { useEffect, useState } from "preact/hooks";

export type Theme = "system" | "light" | "dark";
const KEY = "slipway.theme";

export function useTheme(): [Theme, (theme: Theme) => void] {
  const [theme, setTheme] = useState<Theme>(() => (localStorage.getItem(KEY) as Theme | null) ?? "system");
  useEffect(() => {
    localStorage.setItem(KEY, theme);
    const dark = matchMedia("(prefers-color-scheme: dark)");
    const apply = () => document.documentElement.setAttribute("data-theme", theme === "system" ? (dark.matches ? "dark" : "light") : theme);
    apply();
    if (theme !== "system") return;
    dark.addEventListener("change", apply);
    return () => dark.removeEventListener("change", apply);
  }, [theme]);
  return [theme, setTheme];
}

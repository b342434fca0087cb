import { useCallback, useRef } from 'preact/hooks';

/**
 * A ref for the element a link pointed at (a journal entry, a delivery attempt): it is scrolled to
 * the middle of the window once, when it first appears. Not again at each poll, so reading on past
 * it is not pulled back.
 */
export function useScrolledTo(target: string | undefined): (element: Element | null) => void {
  const scrolledTo = useRef<string | undefined>(undefined);
  return useCallback(
    (element: Element | null) => {
      if (!element || target === undefined || scrolledTo.current === target) return;
      scrolledTo.current = target;
      element.scrollIntoView({ block: 'center' });
    },
    [target],
  );
}
